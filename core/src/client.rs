//! Repeated collection on the device: memoized responses and a privacy
//! ledger, with the state that carries them from one session to the next.
//!
//! Fresh randomization on every report composes: `k` reports of one value
//! cost `kε`, and a majority vote over a few dozen of them recovers the value.
//! With `"memoize": true` the first report of a value draws a *permanent*
//! response, which is stored and sent again for every later report of the
//! same value (RAPPOR's permanent randomized response; for `one_bit_mean`
//! with α-point rounding, Ding, Kulkarni, Yekhanin, NeurIPS 2017). As long
//! as the value does not change, the long-run cost stays the permanent
//! response's ε; a changed value draws (and costs) a new one.
//!
//! * **Memo keys** are HMAC-SHA256 under a random 256-bit per-install secret
//!   of the metric's fingerprint and the value, so a stored key reveals
//!   nothing about the value without the secret. Secret, memos and ledger
//!   never leave the device; the stored memo is the (already randomized)
//!   report.
//! * **The ledger** records the ε each report spends (a memo hit spends
//!   nothing) with its time, and with `"budget": {"epsilon": E, "window":
//!   "1d"}` refuses, with [`Error::PrivacyBudgetExceeded`], a report that
//!   would take the ε spent in the last window above `E` (basic composition:
//!   ε's add). With `"delta": δ` in the budget it charges by the optimal
//!   composition of the window's reports at that δ
//!   (`accounting::compose`, with the `delta` feature), so that, say, 365 reports at ε 0.1
//!   cost about 10.31 at δ = 10⁻⁶ instead of 36.5; with an instantaneous
//!   step the sum stands (see [`Client::spent`]). It fails closed: nothing
//!   is released when the budget is short.
//!   Every charge is kept for the longest window of any config that has
//!   used the state, and each budget is judged on it: two configs of one
//!   metric with different budgets (two versions of an app after a deploy)
//!   share one ledger, and neither makes the other forget what it spent.
//! * **Stored state** is compact bytes ([`ClientState::to_bytes`]:
//!   versioned and checksummed); the JSON text of earlier releases is read
//!   and written back as bytes, its ledger and memos kept.
//! * **Resets**: state that is corrupt (bytes truncated or failing their
//!   checksum, JSON that does not parse) is replaced by a fresh one, and
//!   the reset is counted ([`Client::resets`]), never silently; a client
//!   that already holds a ledger keeps it ([`Client::load`]). A state whose memos were made
//!   under another secret (a lost one) keeps its ledger, drops its dead
//!   memos and counts a reset too. Every reset means new permanent
//!   responses: the long-run ε of a value reported across `r` resets is
//!   `(r+1)·ε`, so resets should stay rare and be monitored.
//!
//! Memoization makes a user's repeated reports of a value identical, so two
//! reports are equal or not exactly as the value stayed or changed.
//! An *instantaneous step* randomizes the permanent response afresh on every
//! report and blurs that: RAPPOR always has one, and the frequency protocols
//! grr, sue, oue, blh and olh take `"instantaneous_epsilon": ε_1` (the ε of
//! one report; the config's `epsilon` stays the long-run `ε_∞`). The ledger
//! then charges a value's reports the exact ε of all of them together, up
//! to `ε_∞` ([`Client::randomize_text`]): more than `ε_1` each, since they
//! all randomize one permanent response. With blh and olh an install keeps one hash
//! seed for every value (LOLOHA), so its seed tells nothing of a change but
//! is the same on every report: a stable pseudonym linking all of them.

#[cfg(feature = "delta")]
use crate::accounting::compose;
use crate::error::{Error, Requirement, Result};
use crate::json::ConfigObject;
use crate::metric::registry::Metric;
use crate::text::{hex_bytes, text, HexBytes};
pub use crate::settings::{parse_window, Budget, ClientKeys, ClientSettings, CLIENT_KEYS};
use crate::privacy::add_rounded_up;
use crate::report::Report;
use crate::rng::{CryptoRng, RngCore};
use hmac::{Hmac, KeyInit, Mac};
use crate::bytes::{ascii, ByteReader, ByteWriter};
use crate::error::StateError;
use crate::json::{Field, FromField};
use sha2::Sha256;

/// The format version of [`ClientState`]: 5, the byte form
/// ([`ClientState::to_bytes`]). States of versions 1 to 4, JSON text as
/// earlier releases stored them (4: each partly charged memo's count of
/// reports; 3: the secret's id and the longest budget window; 2: an
/// install's draws as one list), are read and converted, and written back
/// as bytes.
pub const STATE_VERSION: u32 = 5;

/// The first bytes of a stored client state.
const STATE_MAGIC: &[u8; 4] = b"LDPC";

/// With an instantaneous step, a memo whose reports have cost this share of
/// `ε_∞` is charged the rest: the joint ε of `k` reports tends to `ε_∞` but
/// never reaches it, and a memo that is paid off sends its repeats free
/// instead of adding ever smaller charges to the ledger.
pub const PAID_OFF: f64 = 0.99;

/// With an instantaneous step, a memo's report of this number pays the rest
/// of `ε_∞` whatever its joint ε: that ε takes `O(k²)` steps for `k`
/// reports of a GRR chain, and this bounds the work of one report.
pub const MEMO_REPORTS: u64 = 256;

/// What a client keeps between sessions for one metric.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ClientState {
    /// [`STATE_VERSION`] once read.
    pub version: u32,
    /// The state's identity: the metric (protocol, ε and fingerprint) and
    /// whatever else changes what a memo means.
    pub metric: String,
    /// Which secret the memos were made under: 128 bits of an HMAC under
    /// it, as hex (nothing about the secret itself). `None` only in a
    /// state of version 1 or 2 before it is read.
    pub secret_id: Option<String>,
    /// The longest budget window, in ms, of any config that has used this
    /// state: the ledger keeps every charge that long.
    pub window_ms: u64,
    /// Memo keys (hex HMACs) to the permanent response, as the protocol
    /// stores it (its report as `Report::to_memo` writes it, or RAPPOR's
    /// permanent bits); serialized as hex.
    #[cfg_attr(feature = "serde", serde(serialize_with = "hex_memos"))]
    pub memos: KeyMap<Vec<u8>>,
    /// `(time in ms, ε)` of every report that spent ε in the last
    /// `window_ms`, oldest first.
    pub ledger: Vec<(u64, f64)>,
    /// What this install drew once for memoization (a cohort, sampled
    /// buckets, an α-point offset), if the protocol draws anything.
    pub draws: Option<Vec<u64>>,
    /// With an instantaneous step: the ε charged so far for each memo
    /// whose reports have not yet cost the long-run ε (a memo without an
    /// entry has: what every version 2 state means). Absent otherwise.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "KeyMap::is_empty"))]
    pub charged: KeyMap<f64>,
    /// With an instantaneous step: how many reports each memo of `charged`
    /// has sent (what its next report's charge is computed from; an
    /// integer, kept as a number as `charged` is, which shares its code). A
    /// memo of `charged` without an entry (a version 3 state) counts as many
    /// as the old rule's `ε_1` each could have paid for.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "KeyMap::is_empty"))]
    pub reports: KeyMap<f64>,
}

/// A map from memo keys, kept as a `Vec` sorted by key: JSON's object
/// (serialized in key order, as a `BTreeMap` is), without a B-tree's code in
/// the client's wasm module. A key given twice keeps its last value.
///
/// ```
/// use localdp::client::KeyMap;
/// let mut map = KeyMap::default();
/// assert!(map.is_empty());
/// map.insert("b".to_string(), 2.0);
/// map.insert("a".to_string(), 1.0);
/// map.insert("b".to_string(), 3.0); // replaces
/// assert_eq!((map.len(), map.get("b")), (2, Some(&3.0)));
/// assert_eq!(map.iter().collect::<Vec<_>>(), [("a", &1.0), ("b", &3.0)]); // in key order
/// map.values_mut().for_each(|v| *v *= 2.0);
/// assert_eq!(map.values().sum::<f64>(), 8.0);
/// assert_eq!((map.remove("a"), map.remove("a"), map.len()), (Some(2.0), None, 1));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMap<V>(Vec<(String, V)>);

impl<V> Default for KeyMap<V> {
    fn default() -> Self {
        KeyMap(Vec::new())
    }
}

impl<V> KeyMap<V> {
    fn position(&self, key: &str) -> std::result::Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    ///
    /// See the example on [`KeyMap`].
    pub fn get(&self, key: &str) -> Option<&V> {
        self.position(key).ok().and_then(|i| self.0.get(i)).map(|(_, v)| v)
    }

    /// Sets `key` to `value`.
    ///
    /// See the example on [`KeyMap`].
    pub fn insert(&mut self, key: String, value: V) {
        match self.position(&key) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// Removes `key`, giving its value.
    ///
    /// See the example on [`KeyMap`].
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.position(key).ok().map(|i| self.0.remove(i).1)
    }

    /// The number of keys.
    ///
    /// See the example on [`KeyMap`].
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there is no key.
    ///
    /// See the example on [`KeyMap`].
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The keys and values, in key order.
    ///
    /// See the example on [`KeyMap`].
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The values, in key order.
    ///
    /// See the example on [`KeyMap`].
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    /// The values, mutably, in key order.
    ///
    /// See the example on [`KeyMap`].
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

#[cfg(feature = "serde")]
impl<V: serde::Serialize> serde::Serialize for KeyMap<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

/// Memos as a map of hex texts.
#[cfg(feature = "serde")]
fn hex_memos<S: serde::Serializer>(memos: &KeyMap<Vec<u8>>, serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_map(memos.iter().map(|(key, memo)| (key, text!(HexBytes(memo)))))
}

#[cfg(feature = "json_state")]
impl<V: FromField> FromField for KeyMap<V> {
    fn from_field(field: Field) -> std::result::Result<Self, String> {
        let Field::Object(object) = field else { return Err(field.invalid("a map")) };
        let mut map = KeyMap::default();
        for (key, value) in object.fields() {
            map.insert(key, V::from_field(value)?);
        }
        Ok(map)
    }
}

#[cfg(feature = "json_state")]
crate::config::read_by_hand!(ClientState, ClientState::from_object);

impl ClientState {
    /// An empty state of the metric whose state identity is `metric`.
    fn fresh(metric: String) -> ClientState {
        ClientState {
            version: STATE_VERSION,
            metric,
            secret_id: None,
            window_ms: 0,
            memos: KeyMap::default(),
            ledger: Vec::new(),
            draws: None,
            charged: KeyMap::default(),
            reports: KeyMap::default(),
        }
    }

    /// The `stored` state of `metric`'s client under `secret`, with
    /// `settings`' budget window, and the resets found. A state that does
    /// not parse, or belongs to another metric (another protocol, ε or
    /// fingerprint), is replaced by a fresh one, counted as a reset. A
    /// state of this metric keeps its ledger and longest window whatever
    /// else it holds: written by another config of the metric (one whose
    /// memos mean something else, e.g. 1BitMean's `granularity`), under
    /// another secret, or with draws or memo totals this config cannot use,
    /// it loses what it cannot reuse (memos, their totals, unusable draws),
    /// and losing memos is counted as a reset.
    fn read(metric: &Metric, settings: &ClientSettings, secret: &[u8; 32], stored: Option<&[u8]>) -> (ClientState, u64) {
        let memo = metric.kind().memo();
        let metric_id = metric.id();
        let id = match memo.map(|m| m.identity()).filter(|i| !i.is_empty()) {
            Some(extra) => text!(metric_id, ":", extra),
            None => metric_id.clone(),
        };
        let this_metric = |s: &ClientState| {
            let config = s.metric.strip_prefix(metric_id.as_str());
            config.is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
                && s.ledger.iter().all(|(_, e)| e.is_finite() && *e >= 0.0)
        };
        let (mut state, mut resets) =
            match stored.map(|stored| ClientState::from_stored(stored).ok()) {
                None => (ClientState::fresh(id.clone()), 0),
                Some(Some(s)) if this_metric(&s) => (s, 0),
                Some(_) => (ClientState::fresh(id.clone()), 1),
            };
        let secret_id = keyed(secret, &id, 1, "");
        // Only a JSON state is older than 4 (`from_bytes` reads version 5).
        if cfg!(feature = "json_state") && state.version < 4 {
            // Versions before 4 kept no count: as many reports as the old
            // rule's ε_1 each (rounded up, toward refusal) could have cost.
            let step = memo.and_then(|m| m.instantaneous_epsilon()).unwrap_or(f64::INFINITY);
            state.reports = KeyMap(state.charged.0.iter().map(|(k, c)| (k.clone(), (c / step - 1e-6).ceil().clamp(1.0, MEMO_REPORTS as f64))).collect());
        }
        state.version = STATE_VERSION;
        let draws_usable = state.draws.as_deref().is_none_or(|d| memo.is_some_and(|m| m.draws_valid(d)));
        let counted = state.charged.len() == state.reports.len()
            && state.charged.0.iter().zip(&state.reports.0).all(|((key, _), (counted, n))| {
                key == counted && n.fract() == 0.0 && (1.0..=MEMO_REPORTS as f64).contains(n)
            });
        let memos_usable = state.metric == id
            && draws_usable
            && state.secret_id.as_ref().is_none_or(|known| *known == secret_id)
            && state.charged.values().all(|e| e.is_finite() && *e >= 0.0)
            && counted;
        if !memos_usable {
            resets = resets.max(u64::from(!state.memos.is_empty()));
            state.memos = KeyMap::default();
            state.charged = KeyMap::default();
            state.reports = KeyMap::default();
            if !draws_usable {
                state.draws = None;
            }
            state.metric = id;
        }
        state.secret_id = Some(secret_id);
        state.window_ms = state.window_ms.max(settings.budget.map_or(0, |b| b.window_ms));
        (state, resets)
    }

    /// Adds the charges of `known` (what a client held in memory) that this
    /// state lacks, and its window if longer: a storage that was wiped or
    /// rewritten from scratch takes nothing from a ledger a client knows.
    /// An entry both hold is kept once per time it appears in either.
    fn keep_ledger(&mut self, known: &ClientState) {
        let mut unmatched = self.ledger.clone();
        for entry in &known.ledger {
            match unmatched.iter().position(|e| e == entry) {
                Some(i) => {
                    unmatched.swap_remove(i);
                }
                // In time order, after the entries of its time.
                None => self.ledger.insert(self.ledger.partition_point(|(t, _)| *t <= entry.0), *entry),
            }
        }
        self.window_ms = self.window_ms.max(known.window_ms);
    }

    /// The byte form ([`STATE_VERSION`] 5): a sealed record (magic `LDPC`,
    /// version, length, CRC-32; `crate::bytes`) whose body is the metric,
    /// the secret id (empty for none), the window, the memos (key and
    /// stored response), the ledger (time, ε as its 8 bytes), the draws
    /// (0 for none, else their count + 1) and each partly charged memo (key,
    /// ε charged, reports sent). Every number keeps its exact value.
    ///
    /// ```
    /// use localdp::client::{new_secret, Client, ClientState};
    /// use localdp::{SecureRng, StateError};
    /// let mut rng = SecureRng::new()?;
    /// let config = r#"{"protocol":"grr","epsilon":1,"domain":["a","b"],"memoize":true,
    ///                  "budget":{"epsilon":2,"window":"1d"}}"#;
    /// let mut client = Client::new(config, &new_secret(&mut rng), None)?;
    /// client.randomize_text("a", 0, &mut rng)?;
    /// let bytes = client.state_bytes();
    /// let state = ClientState::from_bytes(&bytes)?;
    /// assert_eq!((state.memos.len(), state.ledger.as_slice()), (1, &[(0, 1.0)][..]));
    /// assert_eq!(state.to_bytes(), bytes);
    /// assert_eq!(ClientState::from_bytes(&bytes[..bytes.len() - 1]), Err(StateError::Truncated));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        self.body().seal(STATE_MAGIC, STATE_VERSION as u8)
    }

    /// [`ClientState::to_bytes`]'s body, before its header.
    fn body(&self) -> ByteWriter {
        let mut w = ByteWriter::default();
        w.text(&self.metric);
        w.text(self.secret_id.as_deref().unwrap_or(""));
        w.uint(self.window_ms);
        w.uint(self.memos.len() as u64);
        for (key, memo) in self.memos.iter() {
            w.text(key);
            w.bytes(memo);
        }
        w.uint(self.ledger.len() as u64);
        for &(time, epsilon) in &self.ledger {
            w.uint(time);
            w.float(epsilon);
        }
        let draws = self.draws.as_deref();
        w.uint(draws.map_or(0, |d| d.len() as u64 + 1));
        draws.unwrap_or_default().iter().for_each(|&d| w.uint(d));
        w.uint(self.charged.len() as u64);
        for (key, &charged) in self.charged.iter() {
            w.text(key);
            w.float(charged);
            // A count the reader refuses (0) where none was kept.
            w.uint(self.reports.get(key).map_or(0, |&n| n as u64));
        }
        w
    }

    /// Reads [`ClientState::to_bytes`]: a typed error, never a panic, for
    /// bytes that are truncated, corrupted (the checksum), of another format
    /// or malformed. What the values mean (a ledger's ε, a memo's count) is
    /// checked when a client takes the state.
    ///
    /// See the example on [`ClientState::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<ClientState, StateError> {
        let mut r = ByteReader::open(bytes, STATE_MAGIC, STATE_VERSION as u8)?;
        let body = r.rest();
        let mut state = ClientState::fresh(r.text()?);
        state.secret_id = Some(r.text()?).filter(|id| !id.is_empty());
        state.window_ms = r.uint()?;
        for _ in 0..r.count()? {
            let key = r.text()?;
            state.memos.insert(key, r.bytes()?.to_vec());
        }
        for _ in 0..r.count()? {
            state.ledger.push((r.uint()?, r.float()?));
        }
        let draws = r.count()?;
        if draws > 0 {
            let mut list = Vec::with_capacity(draws - 1);
            for _ in 1..draws {
                list.push(r.uint()?);
            }
            state.draws = Some(list);
        }
        for _ in 0..r.count()? {
            let key = r.text()?;
            state.charged.insert(key.clone(), r.float()?);
            state.reports.insert(key, r.uint()? as f64);
        }
        r.finish()?;
        // One encoding: keys in order and once each, integers unpadded (the
        // body written again; its header, checked by open, follows from it).
        if state.body().into_body() != body {
            return Err(StateError::Malformed);
        }
        Ok(state)
    }

    /// A stored state: the byte form, or (with the `json_state` feature)
    /// the JSON text of versions 1 to 4 (see [`earlier_state`]).
    fn from_stored(stored: &[u8]) -> Result<ClientState> {
        #[cfg(feature = "json_state")]
        if earlier_state(Some(stored)) {
            let object = ascii(stored).and_then(|text| crate::json::parse_object(&text));
            return ClientState::from_object(&object.ok_or(Error::State(StateError::Malformed))?);
        }
        Ok(ClientState::from_bytes(stored)?)
    }

    /// Reads a stored state of this or an earlier format version (2: without
    /// `secret_id` and `window_ms`; 1: also the install's draws under
    /// per-protocol names, `alpha`, `buckets` or `cohort`).
    #[cfg(feature = "json_state")]
    fn from_object(object: &ConfigObject) -> Result<ClientState> {
        let version = object.read::<u32>("version")?;
        let extra: &[&str] = match version {
            4 => &["draws", "charged", "reports", "secret_id", "window_ms"],
            3 => &["draws", "charged", "secret_id", "window_ms"],
            2 => &["draws", "charged"],
            1 => &["alpha", "buckets", "cohort"],
            _ => return Err(Error::malformed_key("version", "a JSON client state of format version 1 to 4")),
        };
        object.only(&[&["version", "metric", "memos", "ledger"], extra].concat())?;
        let draws = match version {
            1 => match (
                object.read_optional::<u64>("alpha")?,
                object.read_optional::<Vec<u32>>("buckets")?,
                object.read_optional::<u32>("cohort")?,
            ) {
                (None, None, None) => None,
                (Some(alpha), None, None) => Some(vec![alpha]),
                (None, Some(buckets), None) => Some(buckets.into_iter().map(u64::from).collect()),
                (None, None, Some(cohort)) => Some(vec![u64::from(cohort)]),
                _ => return Err(Error::malformed("a version 1 state draws one of alpha, buckets and cohort")),
            },
            _ => object.read_optional("draws")?,
        };
        let memos: KeyMap<String> = object.read_or("memos", KeyMap::default())?;
        Ok(ClientState {
            version,
            metric: object.read("metric")?,
            secret_id: object.read_optional("secret_id")?,
            window_ms: object.read_or("window_ms", 0)?,
            memos: KeyMap(memos.0.into_iter().map(|(key, memo)| (key, stored_memo(memo))).collect()),
            ledger: object.read_or("ledger", Vec::new())?,
            draws,
            charged: object.read_or("charged", KeyMap::default())?,
            reports: object.read_or("reports", KeyMap::default())?,
        })
    }
}

/// A memo of a JSON state as this format stores it: the JSON formats
/// stored a memo as its report's JSON (RAPPOR's: its permanent bits as
/// hex). What is neither becomes an empty memo, which no metric reads
/// ([`Error::CorruptMemo`] when used).
#[cfg(feature = "json_state")]
fn stored_memo(memo: String) -> Vec<u8> {
    match Report::from_stored(&memo) {
        Some(report) => report.to_memo(),
        None => hex_bytes(&memo).unwrap_or_default(),
    }
}

/// True for the JSON text of an earlier release (formats 1 to 4), which
/// starts with `{`, as no byte form does.
fn earlier_state(stored: Option<&[u8]>) -> bool {
    stored.is_some_and(|s| s.first() == Some(&b'{'))
}

/// [`Error::EarlierState`] for the JSON text of an earlier release where
/// this build has no reader for it (a client module of one family): it is
/// neither read nor taken for a corrupt state, which would reset the ledger.
fn refuse_earlier_state(stored: Option<&[u8]>) -> Result<()> {
    match cfg!(feature = "json_state") || !earlier_state(stored) {
        true => Ok(()),
        false => Err(Error::EarlierState),
    }
}

/// One metric's client with memoization and a ledger. The per-install
/// secret and the state are handed in (the JS package keeps them in Web
/// Storage) and read back after every report. What memoization means for a
/// protocol (what an install draws once, which values share a permanent
/// response, what is stored and what is sent) is the protocol's own hook;
/// the client only keeps the memos and the ledger.
#[derive(Clone)]
pub struct Client {
    metric: Metric,
    settings: ClientSettings,
    secret: [u8; 32],
    state: ClientState,
    resets: u64,
}

/// Everything but the secret: with a stored state, the secret would let
/// anyone test candidate values against the memo keys.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("metric", &self.metric)
            .field("settings", &self.settings)
            .field("state", &self.state)
            .field("resets", &self.resets)
            .finish_non_exhaustive()
    }
}

/// A fresh 256-bit secret as hex.
///
/// ```
/// use localdp::client::new_secret;
/// use localdp::SecureRng;
/// let mut rng = SecureRng::new()?;
/// let secret = new_secret(&mut rng);
/// assert_eq!(secret.len(), 64);
/// assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
/// assert_ne!(secret, new_secret(&mut rng));
/// # Ok::<(), localdp::Error>(())
/// ```
pub fn new_secret<R: CryptoRng + RngCore>(rng: &mut R) -> String {
    let mut secret = [0u8; 32];
    rng.fill_bytes(&mut secret);
    text!(HexBytes(&secret))
}

/// The secret's bytes, or the error for text that is not 64 hex digits.
fn parse_secret(hex: &str) -> Result<[u8; 32]> {
    let bytes = hex_bytes(hex).and_then(|bytes| <[u8; 32]>::try_from(bytes).ok());
    bytes.ok_or_else(|| Error::invalid("secret", Requirement::Format { expected: "64 hex digits" }))
}

impl Client {
    /// A client for `config` (the metric's config text, client-only keys
    /// included), with the install's `secret` (hex, from [`new_secret`]) and
    /// the `stored` state of an earlier session, if any ([`Client::state_bytes`],
    /// or the JSON text an earlier release stored, which the next
    /// `state_bytes` gives as bytes). A stored state that does not parse
    /// (truncated, failing its checksum) or belongs to another metric is replaced by a fresh
    /// one, and one whose memos were made under another secret loses them
    /// (keeping its ledger): either is counted as a reset.
    ///
    /// ```
    /// use localdp::client::{new_secret, Client};
    /// use localdp::{Error, SecureRng};
    /// let config = r#"{"protocol":"grr","epsilon":1,"domain":["a","b"],"memoize":true,
    ///                  "budget":{"epsilon":1.5,"window":"1d"}}"#;
    /// let mut rng = SecureRng::new()?;
    /// let secret = new_secret(&mut rng); // kept on the device, with the state
    /// let mut client = Client::new(config, &secret, None)?;
    /// let first = client.randomize_text("a", 0, &mut rng)?;
    /// // A later session: the stored state resends the memoized report for free.
    /// let mut client = Client::new(config, &secret, Some(&client.state_bytes()))?;
    /// assert_eq!(client.randomize_text("a", 1_000, &mut rng)?, first);
    /// assert_eq!(client.spent(1_000), 1.0);
    /// // A new value would take the day past its budget: refused, nothing released.
    /// let refused = client.randomize_text("b", 2_000, &mut rng).unwrap_err();
    /// assert!(matches!(refused, Error::PrivacyBudgetExceeded { .. }));
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn new(config: &str, secret: &str, stored: Option<&[u8]>) -> Result<Self> {
        let config = crate::json::parse_text(config).unwrap_or(Field::Null);
        Client::from_config(crate::metric::kind::as_config(config)?, secret, stored)
    }

    /// [`Client::new`] with a parsed config.
    ///
    /// ```
    /// use localdp::client::{new_secret, Client};
    /// use localdp::SecureRng;
    /// let secret = new_secret(&mut SecureRng::new()?);
    /// let config = serde_json::json!({"protocol": "oue", "epsilon": 1, "domain": 4, "memoize": true});
    /// let client = Client::from_value(config, &secret, None)?;
    /// assert!(client.settings().memoize);
    /// assert!(Client::from_value(serde_json::json!({"protocol": "oue"}), &secret, None).is_err());
    /// # Ok::<(), localdp::Error>(())
    /// ```
    #[cfg(feature = "serde")]
    pub fn from_value(config: serde_json::Value, secret: &str, stored: Option<&[u8]>) -> Result<Self> {
        Client::from_config(crate::metric::kind::config_object(&config)?, secret, stored)
    }

    /// [`Client::from_value`] of a config object.
    #[doc(hidden)]
    pub fn from_config(config: ConfigObject, secret: &str, stored: Option<&[u8]>) -> Result<Self> {
        // Metric::from_config reads the client-only keys a second time: a
        // few comparisons per client, where one read shared by both made
        // every client module but GRR's larger when it was tried.
        let settings = ClientSettings::from_config(&config)?;
        Client::from_parts(Metric::from_config(config)?, settings, secret, stored)
    }

    /// [`Client::from_config`] of a metric and settings already checked:
    /// for a page that reads its config's shape itself (the GRR module's,
    /// js/raw.mjs).
    #[doc(hidden)]
    pub fn from_parts(metric: Metric, settings: ClientSettings, secret: &str, stored: Option<&[u8]>) -> Result<Self> {
        let secret = parse_secret(secret)?;
        refuse_earlier_state(stored)?;
        if settings.memoize && metric.kind().memo().is_none() {
            return Err(Error::invalid("memoize", Requirement::NotFor { protocol: metric.protocol() }));
        }
        let (state, resets) = ClientState::read(&metric, &settings, &secret, stored);
        Ok(Client { metric, settings, secret, state, resets })
    }

    /// Takes the install's `secret` and the `stored` state as [`Client::new`]
    /// with the same config would, without parsing the config again: for a
    /// front end whose storage another process (a tab, a worker) may have
    /// written since this client last read it. On an error nothing changes.
    /// The ledger this client holds is kept when the storage lost it: when
    /// there is no stored state, or one that is corrupt, of another config,
    /// or under another secret (a wiped storage rewritten from scratch by
    /// another context), the charges this client knows of that it lacks are
    /// added to it, so a wipe never returns budget already spent.
    ///
    /// Its example shows the getters too:
    ///
    /// ```
    /// use localdp::client::{new_secret, Client};
    /// use localdp::SecureRng;
    /// let config = r#"{"protocol":"grr","epsilon":1,"domain":["a","b"],"memoize":true,
    ///                  "budget":{"epsilon":5,"window":"1h"}}"#;
    /// let mut rng = SecureRng::new()?;
    /// let secret = new_secret(&mut rng);
    /// let mut client = Client::new(config, &secret, Some(b"not a state"))?;
    /// assert_eq!(client.resets(), 1); // the corrupt state was replaced
    /// assert_eq!(client.metric().epsilon(), 1.0);
    /// assert_eq!(client.settings().budget.map(|b| b.window_ms), Some(3_600_000));
    /// // Another tab reported and stored its state: take it.
    /// let mut other = Client::new(config, &secret, None)?;
    /// other.randomize_text("b", 0, &mut rng)?;
    /// client.load(&secret, Some(&other.state_bytes()))?;
    /// assert_eq!((client.resets(), client.spent(0)), (0, 1.0));
    /// assert!(client.load("not hex", None).is_err()); // and nothing changed
    /// assert_eq!(client.spent(0), 1.0);
    /// // The storage was wiped, secret and all: the memos are lost, the ledger is not.
    /// client.load(&new_secret(&mut rng), None)?;
    /// assert_eq!(client.spent(0), 1.0);
    /// # Ok::<(), localdp::Error>(())
    /// ```
    pub fn load(&mut self, secret: &str, stored: Option<&[u8]>) -> Result<()> {
        let secret = parse_secret(secret)?;
        refuse_earlier_state(stored)?;
        let (mut state, resets) = ClientState::read(&self.metric, &self.settings, &secret, stored);
        // A state under this client's secret that it could take is the
        // record, which holds every charge this client stored (a charge
        // held only here was never stored: a write that lost a race).
        if secret != self.secret || stored.is_none() || resets > 0 {
            state.keep_ledger(&self.state);
        }
        (self.secret, self.state, self.resets) = (secret, state, resets);
        Ok(())
    }

    /// The metric.
    ///
    /// See the example on [`Client::load`].
    pub fn metric(&self) -> &Metric {
        &self.metric
    }

    /// The client-only settings.
    ///
    /// See the example on [`Client::load`].
    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    /// Resets found when this client was made (0 or 1).
    ///
    /// See the example on [`Client::load`].
    pub fn resets(&self) -> u64 {
        self.resets
    }

    /// The state to store after a report: its byte form
    /// ([`ClientState::to_bytes`]).
    ///
    /// See the example on [`Client::new`].
    pub fn state_bytes(&self) -> Vec<u8> {
        self.state.to_bytes()
    }

    /// ε spent within the budget window ending at `now_ms`: the sum of the
    /// window's charges, rounded up addition by addition, so it is never
    /// below the exact total; with a budget δ, their optimal composition at
    /// that δ (`accounting::compose`, with the `delta` feature), never below
    /// the truth and never above the sum.
    ///
    /// See the example on [`Client::new`].
    pub fn spent(&self, now_ms: u64) -> f64 {
        self.window_epsilon(now_ms, None)
    }

    /// [`Client::spent`] with `more` charged too. With an instantaneous
    /// step the sum stands even with a δ: the reports of one memo all
    /// randomize one permanent response, so they are not independent
    /// mechanisms, and composing their charges as if they were would be
    /// below the truth (a memo's `ε_1 + r` reveals up to `RR(ε_1 + r)`, more
    /// than `RR(ε_1) ⊗ RR(r)`).
    fn window_epsilon(&self, now_ms: u64, more: Option<f64>) -> f64 {
        let window = self.settings.budget.map_or(u64::MAX, |b| b.window_ms);
        let charges = || {
            let in_window = self.state.ledger.iter().filter(move |(t, _)| now_ms.saturating_sub(*t) < window);
            in_window.map(|&(_, e)| e).chain(more)
        };
        let sum = charges().fold(0.0, add_rounded_up);
        // Without the delta feature no budget has a δ (ClientSettings
        // refuses one): the sum.
        #[cfg(feature = "delta")]
        if let Some(delta) = self.settings.budget.and_then(|b| b.delta) {
            let independent = self.metric.kind().memo().and_then(|m| m.instantaneous_epsilon()).is_none();
            if independent {
                let reports: Vec<(f64, u64)> = charges().map(|e| (e, 1)).collect();
                // No charge (nothing to compose) or too many distinct ε to
                // enumerate: the sum, itself a valid bound.
                return compose(&reports, delta).map_or(sum, |c| c.epsilon.min(sum));
            }
        }
        sum
    }

    /// Randomizes a value written as text (see [`Metric::randomize_text`]) at
    /// time `now_ms`: from the memo if memoized and seen before, else fresh,
    /// and charged to the ledger (or refused, with nothing stored or
    /// released, if the budget is short).
    ///
    /// What a report costs: a fresh one its ε. The reports of one memo are
    /// charged their joint channel, not a sum: after its `k`-th report a
    /// memo has cost `min(ε_k, ε_∞)`, where `ε_∞` is the long-run ε and
    /// `ε_k` the exact ε of `k` reports of one permanent response
    /// ([`Memo::memo_epsilon`](crate::metric::Memo::memo_epsilon); without
    /// an instantaneous step every report is the permanent response, so the
    /// first costs `ε_∞` and repeats nothing). `ε_1` is the per-report ε,
    /// but `ε_2` can exceed `2ε_1`: the reports all randomize one stored
    /// response, so they are not independent (PROTOCOLS.md §5).
    ///
    /// See the example on [`Client::new`].
    pub fn randomize_text<R: CryptoRng + RngCore>(&mut self, value: &str, now_ms: u64, rng: &mut R) -> Result<Report> {
        let rng: &mut dyn RngCore = rng;
        let metric = self.metric.clone();
        let kind = metric.kind();
        let long_run = kind.long_run_epsilon();
        let memo = kind.memo().filter(|m| self.settings.memoize || m.always());
        let Some(memo) = memo else {
            // Fresh every time: validate the value before charging.
            let report = kind.randomize_text(value, rng)?;
            self.charge(now_ms, long_run)?;
            return Ok(report);
        };
        if self.state.draws.is_none() {
            let draws = memo.draw(rng);
            self.state.draws = (!draws.is_empty()).then_some(draws);
        }
        let draws = self.state.draws.clone().unwrap_or_default();
        let key = self.memo_key(&memo.key(value, &draws)?);
        let stored = self.state.memos.get(&key).cloned();
        let fresh = stored.is_none();
        let (permanent, charged, sent) = match stored {
            // A memo without a total is paid in full; one with a total has a
            // count (ClientState::read drops memos otherwise).
            Some(stored) => match self.state.charged.get(&key).copied() {
                None => (stored, long_run, 0),
                Some(charged) => (stored, charged, self.state.reports.get(&key).map_or(MEMO_REPORTS, |&n| n as u64)),
            },
            None => (memo.permanent(value, &draws, rng)?, 0.0, 0),
        };
        let report = memo.report(&permanent, &draws, rng)?;
        // The memo's reports, this one included, cost their joint ε (never
        // more than ε_∞); this one pays what the memo has not, rounded up.
        // One report is an ε_1 channel (the channel tests hold it to that).
        let joint = match sent {
            0 => memo.instantaneous_epsilon(),
            _ if sent + 1 >= MEMO_REPORTS => None,
            _ => memo.memo_epsilon(sent + 1),
        };
        // The joint ε nears ε_∞ without reaching it: within 1% (or at the
        // memo's MEMO_REPORTS-th report) the memo pays the rest, so that its
        // repeats are free from then on.
        let joint = joint.filter(|&e| e < PAID_OFF * long_run).unwrap_or(long_run);
        let cost = add_rounded_up(joint, -charged).max(0.0);
        if cost > 0.0 {
            self.charge(now_ms, cost)?;
        }
        let total = add_rounded_up(charged, cost);
        if total < long_run {
            self.state.charged.insert(key.clone(), total);
            self.state.reports.insert(key.clone(), (sent + 1) as f64);
        } else {
            self.state.charged.remove(&key);
            self.state.reports.remove(&key);
        }
        if fresh {
            self.state.memos.insert(key, permanent);
        }
        Ok(report)
    }

    /// Records `cost` in the ledger, or refuses it. A config without a
    /// budget records it too, while a config with one has used the state.
    fn charge(&mut self, now_ms: u64, cost: f64) -> Result<()> {
        if let Some(budget) = self.settings.budget {
            // Toward refusal: the exact total (or composition) must fit the budget.
            if self.window_epsilon(now_ms, Some(cost)) > budget.epsilon {
                return Err(Error::PrivacyBudgetExceeded { cost, spent: self.spent(now_ms), budget: budget.epsilon });
            }
        }
        self.state.ledger.push((now_ms, cost));
        let keep = self.state.window_ms;
        self.state.ledger.retain(|(t, _)| now_ms.saturating_sub(*t) < keep);
        Ok(())
    }

    /// The memo key of `key`.
    fn memo_key(&self, key: &str) -> String {
        keyed(&self.secret, &self.state.metric, 0, key)
    }
}

/// HMAC-SHA256(secret, state identity ‖ `tag` ‖ key), first 128 bits, as
/// hex: a memo key (tag 0), or a state's secret id (tag 1, no key).
fn keyed(secret: &[u8; 32], identity: &str, tag: u8, key: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret).expect("any key length");
    mac.update(identity.as_bytes());
    mac.update(&[tag]);
    mac.update(key.as_bytes());
    text!(HexBytes(&mac.finalize().into_bytes()[..16]))
}

//! The trait pair every mechanism implements: [`Randomizer`] on the device,
//! [`Aggregate`] on the server.
//!
//! A mechanism is a value built by a validating constructor (its config
//! checked, its probabilities derived once, with exact integer thresholds).
//! The randomizer *is* that value; the aggregator is made *from* it
//! ([`Aggregate::new`]), so both sides read ε, `p*` and `q*` from one place.
//!
//! An aggregator's running state is integer counts, so merging is exact: the
//! state of a report set split into shards, each shard's state shipped as
//! bytes ([`Aggregate::to_bytes`]) and merged, gives the same estimate, bit
//! for bit, as one aggregator fed everything. The byte format is described
//! in [`crate::state`].

use crate::aggregate::tally::{RejectionCounts, Tally};
use crate::columnar::ReportBatch;
use localdp_core::error::Result;
use localdp_core::report::Report;
pub use localdp_core::randomizer::Randomizer;
use crate::state::{StateReader, StateWriter};

/// The crate-internal half of [`Aggregate`], sealed: the trait is public
/// (so it may bound a public trait) but its module is not, so code outside
/// the crate can neither name it, call its methods nor implement it, and so
/// cannot implement [`Aggregate`] either. Its methods touch the raw counts;
/// only [`Aggregate::add_json`], [`Aggregate::to_bytes`] and
/// [`Aggregate::from_bytes`] use them, the last on a fresh aggregator that is
/// dropped if reading fails, so a half-read state is never observable.
pub(crate) mod sealed {
    use crate::aggregate::tally::Tally;
    use localdp_core::error::Result;
    use crate::state::{StateReader, StateWriter};

    /// Access to an aggregator's running counts, for the crate only.
    pub trait AggregateState {
        /// The accepted and rejected reports.
        fn tally(&self) -> &Tally;

        /// The same, to count into.
        fn tally_mut(&mut self) -> &mut Tally;

        /// Writes the running counts (not the header: see
        /// [`crate::Aggregate::to_bytes`]).
        fn write_counts(&self, out: &mut StateWriter);

        /// Reads what [`AggregateState::write_counts`] wrote into an empty
        /// aggregator of `n` accepted reports, checking that every count is
        /// consistent with `n` and the configuration. On an error the counts
        /// may be partly overwritten: call it on a fresh aggregator only.
        fn read_counts(&mut self, n: u64, input: &mut StateReader<'_>) -> Result<()>;

        /// A report of this aggregator's configuration (its version,
        /// protocol, ε and fingerprint) carrying `payload`: a batch's row
        /// once the batch's envelope matched.
        fn envelope(&self, payload: localdp_core::report::Payload) -> localdp_core::report::Report;
    }
}

/// The accessors every aggregator's [`sealed::AggregateState`] has alike:
/// its `tally` field, and the envelope of its configuration, the field
/// named `$config` (a metric or an oracle, a [`localdp_core::metric::Kind`]).
macro_rules! state_accessors {
    ($config:ident) => {
        fn tally(&self) -> &crate::aggregate::tally::Tally {
            &self.tally
        }

        fn tally_mut(&mut self) -> &mut crate::aggregate::tally::Tally {
            &mut self.tally
        }

        fn envelope(&self, payload: localdp_core::report::Payload) -> localdp_core::report::Report {
            localdp_core::metric::envelope(&self.$config, payload)
        }
    };
}
pub(crate) use state_accessors;

/// The server side: validates and counts reports, merges, estimates, and
/// travels as bytes.
///
/// The trait is sealed: it is implemented by this crate's aggregators
/// ([`crate::FrequencyAggregator`], [`crate::NumericAggregator`],
/// [`crate::RapporAggregator`]) and cannot be implemented outside it.
pub trait Aggregate: Sized + sealed::AggregateState {
    /// The configured mechanism this aggregates.
    type Mechanism: Clone;
    /// What [`Aggregate::estimate`] returns.
    type Estimate;

    /// An empty aggregator for the mechanism.
    fn new(mechanism: Self::Mechanism) -> Self;

    /// The mechanism.
    fn mechanism(&self) -> &Self::Mechanism;

    /// Accepted reports.
    fn n(&self) -> u64 {
        self.tally().n()
    }

    /// Rejected reports, by reason.
    fn rejected(&self) -> &RejectionCounts {
        self.tally().rejected()
    }

    /// Validates a report and, if it was made under this configuration and
    /// is well formed, adds it. A refused report is counted by reason and
    /// returned as [`localdp_core::Error::Rejected`]; nothing accepted is lost.
    fn add(&mut self, report: &Report) -> Result<()>;

    /// Parses, validates and adds one JSON report (bytes that are not UTF-8
    /// are malformed).
    fn add_json(&mut self, text: &[u8]) -> Result<()> {
        self.add_parsed(Report::from_json(text))
    }

    /// Adds a parsed report, or counts why it could not be parsed: the one
    /// place a parser's refusal is counted, whatever the parser (JSON text,
    /// a JS object).
    fn add_parsed(&mut self, parsed: Result<Report>) -> Result<()> {
        match parsed {
            Ok(report) => self.add(&report),
            Err(e) => Err(self.tally_mut().reject(e)),
        }
    }

    /// Validates and adds every row of a batch of columns: the envelope is
    /// checked once; rejected rows are counted by reason exactly as
    /// [`Aggregate::add_json`] counts the same reports, and what is accepted
    /// stays. Returns the first rejected row and its error (`None` if every
    /// row was accepted).
    ///
    /// This default goes row by row ([`ReportBatch::row`]); frequency and
    /// numeric aggregators count columns with kernels instead.
    ///
    /// ```
    /// use localdp::columnar::{Column, ReportBatch};
    /// use localdp::{Aggregate, FrequencyAggregator, FrequencyOracle, Metric};
    /// let oracle = FrequencyOracle::from_json(r#"{"protocol":"hrr","epsilon":1,"domain":8}"#).unwrap();
    /// let id = Metric::from_json(r#"{"protocol":"hrr","epsilon":1,"domain":8}"#).unwrap().id();
    /// let (seeds, bits) = ([1u32, 5, 15], [1u64, 0, 1]);
    /// let batch = ReportBatch {
    ///     seed: Some(Column { values: &seeds, valid: None }),
    ///     value: Some(Column { values: &bits, valid: None }),
    ///     ..ReportBatch::new(1, &id, 3)
    /// };
    /// let mut aggregator = FrequencyAggregator::new(oracle);
    /// assert!(aggregator.add_batch(&batch).is_none());
    /// assert_eq!(aggregator.n(), 3);
    /// ```
    fn add_batch(&mut self, batch: &ReportBatch<'_>) -> Option<(usize, localdp_core::error::Error)> {
        add_rows(self, batch)
    }

    /// Adds everything `other` accepted and rejected. Both must have the same
    /// configuration ([`localdp_core::Error::MergeMismatch`] otherwise, and nothing
    /// changes).
    fn merge(&mut self, other: &Self) -> Result<()>;

    /// The estimate, with standard errors and 95% intervals.
    fn estimate(&self) -> Result<Self::Estimate>;

    /// The identity of the configuration the counts belong to: protocol, ε
    /// and fingerprint, as reports carry them.
    fn state_id(&self) -> String;

    /// The state as compact bytes: versioned, checksummed, tagged with the
    /// configuration's identity ([`crate::state`]).
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = StateWriter::new(&self.state_id());
        self.tally().write(&mut out);
        self.write_counts(&mut out);
        out.finish()
    }

    /// The aggregator whose state `bytes` hold, for `mechanism`. Bytes that
    /// are truncated, corrupted, of another format version or of another
    /// configuration are refused with [`localdp_core::Error::State`], never a panic.
    fn from_bytes(mechanism: Self::Mechanism, bytes: &[u8]) -> Result<Self> {
        let mut aggregator = Self::new(mechanism);
        let mut input = StateReader::open(bytes, &aggregator.state_id())?;
        let tally = Tally::read(&mut input)?;
        aggregator.read_counts(tally.n(), &mut input)?;
        *aggregator.tally_mut() = tally;
        input.finish()?;
        Ok(aggregator)
    }
}

/// The default [`Aggregate::add_batch`], and the fallback of the kernels
/// when a batch has columns they do not read: the envelope checked once,
/// then row by row through [`ReportBatch::row`] and [`Aggregate::add`] of a
/// report carrying the aggregator's own envelope.
pub(crate) fn add_rows<A: Aggregate>(aggregator: &mut A, batch: &ReportBatch<'_>) -> Option<(usize, localdp_core::error::Error)> {
    let envelope = batch.envelope(&aggregator.state_id());
    let mut first = None;
    for i in 0..batch.len {
        let result = match batch.envelope_rejection(envelope, i) {
            Some(e) => Err(aggregator.tally_mut().reject(e)),
            None => match batch.row(i) {
                Ok(payload) => aggregator.add(&aggregator.envelope(payload)),
                Err(e) => Err(aggregator.tally_mut().reject(e)),
            },
        };
        if let (Err(e), None) = (result, &first) {
            first = Some((i, e));
        }
    }
    first
}

/// The counts and tally of two aggregators of one configuration added
/// together: the same state id (protocol, ε and fingerprint: a fingerprint
/// leaves ε out, and counts made at another ε would decode with the wrong
/// channel) and what else the caller requires (`same`); else the mismatch
/// naming both states. Nothing is changed: the caller stores the result.
pub(crate) fn merged_counts<A: Aggregate>(ours: &A, theirs: &A, same: bool, counts: [&[u64]; 2]) -> Result<(Vec<u64>, Tally)> {
    if !same || ours.state_id() != theirs.state_id() {
        return Err(localdp_core::error::Error::MergeMismatch {
            ours: ours.state_id(),
            theirs: theirs.state_id(),
            conflict: localdp_core::error::MergeConflict::Configuration,
        });
    }
    Ok((crate::aggregate::tally::summed(counts[0], counts[1])?, ours.tally().merged(theirs.tally())?))
}


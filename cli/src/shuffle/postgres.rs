//! The shuffler's tables on PostgreSQL (`localdp shuffle --db postgres://…`):
//! those of its SQLite file, in a schema of their own (`localdp_shuffler`),
//! connected, migrated and locked as the collector's store is
//! (`serve/postgres.rs`):
//!
//! ```sql
//! localdp_shuffler.migrations (version, applied)
//! localdp_shuffler.pending (id, metric, report)            -- a random id
//! localdp_shuffler.outbox  (id, metric, size, body, parked) -- a random id
//! ```
//!
//! **One shuffler per database.** A second `localdp shuffle` on the same
//! database refuses to start (a session advisory lock, held while it
//! runs): one process forms and sends the batches, so no batch is sent by
//! two at once. A lock lost with its connection (a restarted server) is
//! taken again before the next write; if another shuffler took it
//! meanwhile, this one writes nothing while that one holds it, and tries
//! again before each write (it goes on once that one stops).
//!
//! **Erasure.** The tables are logged (an unlogged table loses acknowledged
//! reports in a crash). A batch's reports leave `pending` in the
//! transaction that forms it, the batch leaves `outbox` once acknowledged,
//! and each round that forwarded a batch ends with a `VACUUM` of both
//! tables, which removes the dead row versions. Their bytes stay in the
//! write-ahead log, and in freed page space, until PostgreSQL reuses them
//! (docs/shuffler.md says what to do where that matters).

use super::outgoing::Outgoing;
use super::outgoing::Hold;
use crate::serve::postgres::{connect, db, hold_lock, migrate, try_lock, unavailable, Connected, Lock, Schema, BEGUN, SHUFFLER_LOCK};
use crate::serve::store::StoreResult;
use deadpool_postgres::Object;
use localdp::rng::RngCore;

const SCHEMA: Schema = Schema {
    name: "localdp_shuffler",
    migrations: &["
CREATE TABLE localdp_shuffler.pending (
    id BIGINT PRIMARY KEY,
    metric TEXT NOT NULL,
    report TEXT NOT NULL
);
CREATE INDEX pending_by_metric ON localdp_shuffler.pending(metric);
CREATE TABLE localdp_shuffler.outbox (
    id TEXT PRIMARY KEY,
    metric TEXT NOT NULL,
    size BIGINT NOT NULL,
    body TEXT NOT NULL,
    parked BOOLEAN NOT NULL DEFAULT false
);
"],
    shared: false,
};

/// The lock's connection and one to work on.
const POOL_SIZE: usize = 2;

pub struct Tables {
    db: Connected,
    /// Holds [`SHUFFLER_LOCK`] for as long as its session lives; `None`
    /// from when it was found lost until it is taken again.
    lock: tokio::sync::Mutex<Option<Object>>,
}

impl Tables {
    /// Connects, takes the database's shuffler lock, and migrates the schema.
    pub fn open(url: &str) -> StoreResult<Tables> {
        let connected = connect(url, "localdp shuffle", POOL_SIZE)?;
        let shown = &connected.shown;
        let lock = connected.runtime.block_on(async {
            let mut lock = connected.client().await?;
            if !try_lock(&lock, SHUFFLER_LOCK).await? {
                return Err(format!("{shown}: another localdp shuffle runs on this database (one at a time: it alone forms and sends the batches)"));
            }
            migrate(&mut lock, &SCHEMA).await.map_err(|e| format!("{shown}: {e}"))?;
            // VACUUM skips, with only a warning, a table whose owner's
            // rights this role lacks: forwarded rows would stay.
            let foreign: i64 = lock
                .query_one(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = 'localdp_shuffler' AND c.relname IN ('pending', 'outbox') \
                     AND NOT pg_has_role(c.relowner, 'USAGE')",
                    &[],
                )
                .await
                .map_err(db)?
                .get(0);
            if foreign > 0 {
                return Err(format!(
                    "{shown}: this role does not own the tables of schema localdp_shuffler, so it cannot VACUUM away \
                     the forwarded reports: run the shuffler as their owner (the role that created them)"
                ));
            }
            Ok(lock)
        })?;
        Ok(Tables { db: connected, lock: tokio::sync::Mutex::new(Some(lock)) })
    }

    /// The URL without its password.
    pub fn describe(&self) -> &str {
        &self.db.shown
    }

    /// Runs `work` with a connection, once the lock is known held.
    fn run<T>(&self, work: impl AsyncFnOnce(&mut Object) -> Result<T, tokio_postgres::Error>) -> StoreResult<T> {
        self.db.runtime.block_on(self.locked())?;
        self.read(work)
    }

    /// Runs `work` with a connection, without the lock: a read (the lock
    /// guards writes, and its check would cost each read a round trip).
    fn read<T>(&self, work: impl AsyncFnOnce(&mut Object) -> Result<T, tokio_postgres::Error>) -> StoreResult<T> {
        self.db.runtime.block_on(async {
            let mut client = self.db.client().await?;
            work(&mut client).await.map_err(db)
        })
    }

    /// `Ok` once the lock is known held (taken again if it was lost).
    async fn locked(&self) -> StoreResult<()> {
        match hold_lock(&self.lock, &self.db, SHUFFLER_LOCK).await? {
            Lock::Kept | Lock::Again => Ok(()),
            Lock::Lost => Err(format!(
                "{}: another localdp shuffle took this database while this one's connection was lost; \
                 this shuffler stores nothing while that one runs (it tries to take the database again at each post)",
                self.db.shown
            )),
        }
    }

    /// Keeps the reports of `posts`, all or none, each under a random row
    /// id, in one statement of one transaction (all drawn again in the
    /// unlikely case one is taken). The lock is checked while the
    /// transaction begins (on its own connection), so the check costs a
    /// post no round trip of its own; nothing commits unless it is held.
    /// A COMMIT left without an answer is asked about, as the collector's
    /// is: `Ok` if it committed, so that its posts, answered 200, are not
    /// sent and held again.
    pub fn hold(&self, posts: &[Hold], rng: &mut dyn RngCore) -> StoreResult<()> {
        let metrics: Vec<&str> = posts.iter().flat_map(|post| post.reports.iter().map(|_| post.metric.as_str())).collect();
        let reports: Vec<&str> = posts.iter().flat_map(|post| post.reports.iter().map(String::as_str)).collect();
        self.db.runtime.block_on(async {
            let mut client = self.db.client().await?;
            loop {
                let begin = async {
                    let transaction = client.transaction().await?;
                    let begun = transaction.prepare_cached(BEGUN).await?;
                    let xid: i64 = transaction.query_one(&begun, &[]).await?.get(0);
                    Ok::<_, tokio_postgres::Error>((transaction, xid))
                };
                let (locked, transaction) = tokio::join!(self.locked(), begin);
                locked?;
                let (transaction, xid) = transaction.map_err(db)?;
                let ids: Vec<i64> = reports.iter().map(|_| rng.next_u64() as i64).collect();
                let insert = transaction
                    .prepare_cached(
                        "INSERT INTO localdp_shuffler.pending (id, metric, report) SELECT id, metric, report \
                         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS held (id, metric, report) ON CONFLICT (id) DO NOTHING",
                    )
                    .await
                    .map_err(db)?;
                if transaction.execute(&insert, &[&ids, &metrics, &reports]).await.map_err(db)? == reports.len() as u64 {
                    return match transaction.commit().await {
                        Ok(()) => Ok(()),
                        Err(e) if unavailable(&e) => self.db.lost_commit(client, xid, db(e), "localdp shuffle").await,
                        Err(e) => Err(db(e)),
                    };
                }
            }
        })
    }

    /// Reports held per metric.
    pub fn held(&self) -> StoreResult<Vec<(String, u64)>> {
        self.read(async |client| {
            let rows = client.query("SELECT metric, count(*) FROM localdp_shuffler.pending GROUP BY metric", &[]).await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get::<_, i64>(1) as u64)).collect())
        })
    }

    /// Forms a batch of `metric` in one transaction: `choose` takes the
    /// held reports (row id, report) and says which leave `pending` for the
    /// outbox, as which batch.
    pub fn form(&self, metric: &str, choose: impl FnOnce(Vec<(i64, String)>) -> (Vec<i64>, Outgoing)) -> StoreResult<Outgoing> {
        self.run(async |client| {
            let transaction = client.transaction().await?;
            transaction.execute(BEGUN, &[]).await?;
            let rows = transaction
                .query("SELECT id, report FROM localdp_shuffler.pending WHERE metric = $1 ORDER BY id", &[&metric])
                .await?;
            let (ids, outgoing) = choose(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect());
            transaction.execute("DELETE FROM localdp_shuffler.pending WHERE id = ANY($1)", &[&ids]).await?;
            transaction
                .execute(
                    "INSERT INTO localdp_shuffler.outbox (id, metric, size, body) VALUES ($1, $2, $3, $4)",
                    &[&outgoing.id, &outgoing.metric, &(outgoing.size as i64), &outgoing.body],
                )
                .await?;
            transaction.commit().await?;
            Ok(outgoing)
        })
    }

    /// The batches formed, not yet acknowledged and not parked.
    pub fn outbox(&self) -> StoreResult<Vec<Outgoing>> {
        self.read(async |client| {
            let rows = client.query("SELECT id, metric, size, body FROM localdp_shuffler.outbox WHERE NOT parked", &[]).await?;
            Ok(rows.iter().map(|r| Outgoing { id: r.get(0), metric: r.get(1), size: r.get::<_, i64>(2) as u64, body: r.get(3) }).collect())
        })
    }

    /// The batches formed and not yet acknowledged: (waiting, parked).
    pub fn batches(&self) -> StoreResult<(u64, u64)> {
        self.read(async |client| {
            let row = client
                .query_one("SELECT count(*) FILTER (WHERE NOT parked), count(*) FILTER (WHERE parked) FROM localdp_shuffler.outbox", &[])
                .await?;
            Ok((row.get::<_, i64>(0) as u64, row.get::<_, i64>(1) as u64))
        })
    }

    /// Parks a batch the collector would not take as it is.
    pub fn park(&self, id: &str) -> StoreResult<()> {
        self.run(async |client| client.execute("UPDATE localdp_shuffler.outbox SET parked = true WHERE id = $1", &[&id]).await.map(|_| ()))
    }

    /// Makes the parked batches due again; how many there were.
    pub fn unpark(&self) -> StoreResult<usize> {
        self.run(async |client| client.execute("UPDATE localdp_shuffler.outbox SET parked = false WHERE parked", &[]).await.map(|n| n as usize))
    }

    /// Drops an acknowledged batch.
    pub fn sent(&self, id: &str) -> StoreResult<()> {
        self.run(async |client| client.execute("DELETE FROM localdp_shuffler.outbox WHERE id = $1", &[&id]).await.map(|_| ()))
    }

    /// Removes the dead row versions of the forwarded reports (`VACUUM`;
    /// not in a transaction).
    pub fn scrub(&self) -> StoreResult<()> {
        self.run(async |client| client.batch_execute("VACUUM localdp_shuffler.pending, localdp_shuffler.outbox").await)
    }
}

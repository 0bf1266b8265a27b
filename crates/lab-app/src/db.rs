//! The database: TechEmpower's two tables in SQLite. `World` holds 10,000 rows of
//! `(id, randomNumber)` with both in 1..=10,000; `Fortune` the twelve fortunes of the published
//! rules (one with markup and one in Japanese, so that escaping and UTF-8 are checked).
//!
//! Statements are prepared once per connection (rusqlite's statement cache): a CGI program
//! prepares them once per request, a persistent server once per process, as the rules allow.

use rusqlite::{params, Connection, OpenFlags};
use std::path::Path;

/// Rows in `World`.
pub const WORLD_ROWS: u32 = 10_000;

/// The fortunes of TechEmpower's rules, ids 1 to 12.
pub const FORTUNES: [&str; 12] = [
    "fortune: No such file or directory",
    "A computer scientist is someone who fixes things that aren't broken.",
    "After enough decimal places, nobody gives a damn.",
    "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
    "A computer program does what you tell it to do, not what you want it to do.",
    "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    "Any program that runs right is obsolete.",
    "A list is only as strong as its weakest link. — Donald Knuth",
    "Feature: A bug with seniority.",
    "Computers make very fast, very accurate mistakes.",
    "<script>alert(\"This should not be displayed in a browser alert box.\");</script>",
    "フレームワークのベンチマーク",
];

/// An open database.
pub struct Db {
    conn: Connection,
}

/// A `World` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct World {
    pub id: u32,
    #[serde(rename = "randomNumber")]
    pub random_number: u32,
}

impl Db {
    /// Opens an existing database for reading and writing.
    pub fn open(path: &Path) -> rusqlite::Result<Db> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Writers (`/updates`) from several processes wait for each other instead of failing.
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(Db { conn })
    }

    /// Creates (or recreates) the tables at `path` with their rows.
    pub fn create(path: &Path, seed: u64) -> rusqlite::Result<Db> {
        let mut conn = Connection::open(path)?;
        // Write-ahead logging: readers never wait for the `/updates` writers.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let mut rng = fastrand::Rng::with_seed(seed);
        let tx = conn.transaction()?;
        tx.execute_batch(
            "DROP TABLE IF EXISTS World; DROP TABLE IF EXISTS Fortune;
             CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER NOT NULL);
             CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT NOT NULL);",
        )?;
        {
            let mut insert = tx.prepare("INSERT INTO World (id, randomNumber) VALUES (?1, ?2)")?;
            for id in 1..=WORLD_ROWS {
                insert.execute(params![id, rng.u32(1..=WORLD_ROWS)])?;
            }
            let mut insert = tx.prepare("INSERT INTO Fortune (id, message) VALUES (?1, ?2)")?;
            for (i, m) in FORTUNES.iter().enumerate() {
                insert.execute(params![i as u32 + 1, m])?;
            }
        }
        tx.commit()?;
        drop(conn);
        Db::open(path)
    }

    /// `World` row `id`.
    pub fn world(&self, id: u32) -> rusqlite::Result<World> {
        let mut st = self
            .conn
            .prepare_cached("SELECT id, randomNumber FROM World WHERE id = ?1")?;
        st.query_row([id], |r| {
            Ok(World {
                id: r.get(0)?,
                random_number: r.get(1)?,
            })
        })
    }

    /// Sets the rows' random numbers, in one transaction (the rules allow a batch).
    pub fn update(&mut self, rows: &[World]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached("UPDATE World SET randomNumber = ?1 WHERE id = ?2")?;
            for w in rows {
                st.execute(params![w.random_number, w.id])?;
            }
        }
        tx.commit()
    }

    /// Every fortune, `(id, message)`.
    pub fn fortunes(&self) -> rusqlite::Result<Vec<(u32, String)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT id, message FROM Fortune")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }
}

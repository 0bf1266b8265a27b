//! The database: TechEmpower's two tables, in SQLite (embedded, the default) or PostgreSQL (a
//! server of its own, `postgres://` URLs). `World` holds 10,000 rows of `(id, randomNumber)`
//! with both in 1..=10,000; `Fortune` the twelve fortunes of the published rules (one with
//! markup and one in Japanese, so that escaping and UTF-8 are checked). Both databases get the
//! same rows from the same seed ([`world_rows`]).
//!
//! Statements are prepared once per connection (rusqlite's statement cache; PostgreSQL's on
//! first use): a CGI program prepares them once per request, a persistent server once per
//! process, as the rules allow.

use postgres::{Client, NoTls, Statement};
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

/// A database error, of either kind.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// From SQLite (rusqlite), the embedded database.
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    /// From the PostgreSQL server or the connection to it.
    #[error("{0}")]
    Postgres(#[from] postgres::Error),
}

/// A result whose error is the database's, of either kind.
pub type Result<T> = std::result::Result<T, Error>;

/// Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`, e.g.
/// `postgres://flint@%2Ftmp%2Fpg/flint`, the socket directory as the host) rather than a
/// SQLite file.
pub fn is_postgres(location: &Path) -> bool {
    location
        .to_str()
        .is_some_and(|s| s.starts_with("postgres://") || s.starts_with("postgresql://"))
}

/// The `World` rows made from `seed`: the same in either database.
pub fn world_rows(seed: u64) -> Vec<World> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (1..=WORLD_ROWS)
        .map(|id| World {
            id,
            random_number: rng.u32(1..=WORLD_ROWS),
        })
        .collect()
}

/// An open database.
pub enum Db {
    /// A SQLite file, opened in this process: the database's work is the application's CPU.
    Sqlite(Connection),
    /// A connection to a PostgreSQL server (boxed: its prepared statements make it large).
    Postgres(Box<Pg>),
}

/// A PostgreSQL connection with its statements, each prepared when first used.
pub struct Pg {
    client: Client,
    world: Option<Statement>,
    update: Option<Statement>,
    fortunes: Option<Statement>,
}

const PG_WORLD: &str = "SELECT id, randomNumber FROM World WHERE id = $1";
const PG_UPDATE: &str = "UPDATE World SET randomNumber = $1 WHERE id = $2";
const PG_FORTUNES: &str = "SELECT id, message FROM Fortune";

/// `slot`'s statement, prepared on `client` the first time.
fn prepared(client: &mut Client, slot: &mut Option<Statement>, sql: &str) -> Result<Statement> {
    if let Some(st) = slot {
        return Ok(st.clone());
    }
    let st = client.prepare(sql)?;
    *slot = Some(st.clone());
    Ok(st)
}

fn world_of(id: i32, random_number: i32) -> World {
    World {
        id: id as u32,
        random_number: random_number as u32,
    }
}
/// A `World` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct World {
    /// The row's key, 1 to [`WORLD_ROWS`].
    pub id: u32,
    /// A number from 1 to [`WORLD_ROWS`]; `randomNumber` in the JSON, as the rules name it.
    #[serde(rename = "randomNumber")]
    pub random_number: u32,
}

impl Db {
    /// Opens an existing database for reading and writing: a SQLite file, or a PostgreSQL
    /// database when `location` is a `postgres://` URL ([`is_postgres`]).
    pub fn open(location: &Path) -> Result<Db> {
        if let Some(url) = location.to_str().filter(|_| is_postgres(location)) {
            let client = Client::connect(url, NoTls)?;
            return Ok(Db::Postgres(Box::new(Pg {
                client,
                world: None,
                update: None,
                fortunes: None,
            })));
        }
        let conn = Connection::open_with_flags(
            location,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // Writers (`/updates`) from several processes wait for each other instead of failing.
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(Db::Sqlite(conn))
    }

    /// Creates (or recreates) the tables at `location` with their rows.
    pub fn create(location: &Path, seed: u64) -> Result<Db> {
        let rows = world_rows(seed);
        if let Some(url) = location.to_str().filter(|_| is_postgres(location)) {
            let mut client = Client::connect(url, NoTls)?;
            let mut tx = client.transaction()?;
            tx.batch_execute(
                "DROP TABLE IF EXISTS World; DROP TABLE IF EXISTS Fortune;
                 CREATE TABLE World (id integer PRIMARY KEY, randomNumber integer NOT NULL);
                 CREATE TABLE Fortune (id integer PRIMARY KEY, message text NOT NULL);",
            )?;
            // Each table in one statement: its columns as arrays.
            let ids: Vec<i32> = rows.iter().map(|w| w.id as i32).collect();
            let numbers: Vec<i32> = rows.iter().map(|w| w.random_number as i32).collect();
            tx.execute(
                "INSERT INTO World (id, randomNumber) SELECT * FROM unnest($1::integer[], $2::integer[])",
                &[&ids, &numbers],
            )?;
            let ids: Vec<i32> = (1..=FORTUNES.len() as i32).collect();
            let messages: Vec<&str> = FORTUNES.to_vec();
            tx.execute(
                "INSERT INTO Fortune (id, message) SELECT * FROM unnest($1::integer[], $2::text[])",
                &[&ids, &messages],
            )?;
            tx.commit()?;
            drop(client);
            return Db::open(location);
        }
        let mut conn = Connection::open(location)?;
        // Write-ahead logging: readers never wait for the `/updates` writers.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        let tx = conn.transaction()?;
        tx.execute_batch(
            "DROP TABLE IF EXISTS World; DROP TABLE IF EXISTS Fortune;
             CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER NOT NULL);
             CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT NOT NULL);",
        )?;
        {
            let mut insert = tx.prepare("INSERT INTO World (id, randomNumber) VALUES (?1, ?2)")?;
            for w in &rows {
                insert.execute(params![w.id, w.random_number])?;
            }
            let mut insert = tx.prepare("INSERT INTO Fortune (id, message) VALUES (?1, ?2)")?;
            for (i, m) in FORTUNES.iter().enumerate() {
                insert.execute(params![i as u32 + 1, m])?;
            }
        }
        tx.commit()?;
        drop(conn);
        Db::open(location)
    }

    /// `World` row `id`.
    pub fn world(&mut self, id: u32) -> Result<World> {
        match self {
            Db::Sqlite(conn) => {
                let mut st =
                    conn.prepare_cached("SELECT id, randomNumber FROM World WHERE id = ?1")?;
                Ok(st.query_row([id], |r| {
                    Ok(World {
                        id: r.get(0)?,
                        random_number: r.get(1)?,
                    })
                })?)
            }
            Db::Postgres(pg) => {
                let st = prepared(&mut pg.client, &mut pg.world, PG_WORLD)?;
                let row = pg.client.query_one(&st, &[&(id as i32)])?;
                Ok(world_of(row.try_get(0)?, row.try_get(1)?))
            }
        }
    }

    /// Sets the rows' random numbers, in one transaction (the rules allow a batch).
    pub fn update(&mut self, rows: &[World]) -> Result<()> {
        match self {
            Db::Sqlite(conn) => {
                let tx = conn.transaction()?;
                {
                    let mut st =
                        tx.prepare_cached("UPDATE World SET randomNumber = ?1 WHERE id = ?2")?;
                    for w in rows {
                        st.execute(params![w.random_number, w.id])?;
                    }
                }
                Ok(tx.commit()?)
            }
            Db::Postgres(pg) => {
                let st = prepared(&mut pg.client, &mut pg.update, PG_UPDATE)?;
                let mut tx = pg.client.transaction()?;
                for w in rows {
                    tx.execute(&st, &[&(w.random_number as i32), &(w.id as i32)])?;
                }
                Ok(tx.commit()?)
            }
        }
    }

    /// Every fortune, `(id, message)`.
    pub fn fortunes(&mut self) -> Result<Vec<(u32, String)>> {
        match self {
            Db::Sqlite(conn) => {
                let mut st = conn.prepare_cached("SELECT id, message FROM Fortune")?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            }
            Db::Postgres(pg) => {
                let st = prepared(&mut pg.client, &mut pg.fortunes, PG_FORTUNES)?;
                let rows = pg.client.query(&st, &[])?;
                rows.iter()
                    .map(|r| Ok((r.try_get::<_, i32>(0)? as u32, r.try_get(1)?)))
                    .collect()
            }
        }
    }
}

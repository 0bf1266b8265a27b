//! The dynamic experiment's database (`--db`): in a file of its own, below both the experiment
//! (`dynamic.rs`) and the result rows (`results.rs`) that carry it.

/// The dynamic experiment's database (`--db`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database {
    /// Embedded in the application's processes (its CPU is the application tier's).
    Sqlite,
    /// A server of its own started by the lab ([`Postgres`](crate::dynamic_postgres::Postgres)): the `db` tier.
    Postgres,
}

impl Database {
    /// The name `--db` takes and the tables and JSON show.
    pub fn name(self) -> &'static str {
        match self {
            Database::Sqlite => "sqlite",
            Database::Postgres => "postgres",
        }
    }
}

impl std::str::FromStr for Database {
    type Err = String;
    fn from_str(text: &str) -> Result<Database, String> {
        match text {
            "sqlite" => Ok(Database::Sqlite),
            "postgres" | "postgresql" => Ok(Database::Postgres),
            _ => Err(format!(
                "unknown database `{text}` (known: sqlite, postgres)"
            )),
        }
    }
}

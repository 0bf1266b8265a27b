//! What a dynamic stack gives the user its web server's processes drop to when the lab runs as
//! root (Apache's `www-data`, h2o's `nobody`): the SQLite database that Apache's CGI programs,
//! php-fpm's children or mod_php's Apache children write, and the application's unix sockets
//! the web server connects to. Nothing else changes hands: the programs and their directory stay
//! root's, and the sockets no other local user can reach.

use lab_app::DB_DIR;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// `user`'s uid and primary gid, from /etc/passwd (`nobody`'s group is `nogroup` on Debian, so
/// the group is the user's own, never a group of the same name).
fn ids(user: &str) -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    let ids = passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&user))
            .then(|| Some((f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?)))?
    });
    ids.ok_or_else(|| format!("no user {user} in /etc/passwd"))
}

/// Gives the SQLite database `db` and its own directory ([`DB_DIR`], never the CGI programs'
/// directory, whose programs root runs later) to `user`, whom Apache's CGI programs, php-fpm's
/// children or Apache prefork's children (mod_php) run as: they write its WAL and shared memory
/// beside it. SQLite creates those files with the database's owner and mode when it runs as
/// root, so the root processes of the other tiers keep them writable. Nothing to give when the
/// database is PostgreSQL's (a URL).
pub fn give_database(db: &Path, user: &str) -> Result<(), String> {
    if lab_app::db::is_postgres(db) {
        return Ok(());
    }
    let db_dir = db.parent().filter(|d| d.ends_with(DB_DIR));
    let db_dir =
        db_dir.ok_or_else(|| format!("{} is not in a {DB_DIR} directory", db.display()))?;
    let (uid, gid) = ids(user)?;
    let entries = std::fs::read_dir(db_dir).map_err(|e| format!("{}: {e}", db_dir.display()))?;
    let databases = entries.flatten().map(|e| e.path());
    for path in std::iter::once(db_dir.to_owned()).chain(databases) {
        std::os::unix::fs::chown(&path, Some(uid), Some(gid))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Gives the application's unix `sockets` (flint-app's, made by root) to `user` and its group,
/// mode 0660: the web server's processes connect as that user, root (the lab's other processes)
/// as it always can, and no other local user can hand the application requests.
pub fn give_sockets(sockets: &[&Path], user: &str) -> Result<(), String> {
    let (uid, gid) = ids(user)?;
    for socket in sockets {
        std::os::unix::fs::chown(socket, Some(uid), Some(gid))
            .map_err(|e| format!("{}: {e}", socket.display()))?;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o660))
            .map_err(|e| format!("{}: {e}", socket.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::prepare::prepare;
    use super::*;
    use lab_app::deploy::CGI_PROGRAM;
    use lab_app::php;
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::net::{UnixListener, UnixStream};

    fn root() -> bool {
        nix::unistd::geteuid().is_root()
    }

    #[test]
    fn the_database_is_given_away_in_its_own_directory_never_the_programs_one() {
        // As the lab's network tests need root, so does this one: giving files away is what
        // it checks (the project's test command runs as root).
        assert!(root(), "giving files to another user needs root");
        // A flint-app whose `init` makes an empty database file.
        let bin = tempfile::tempdir().unwrap();
        let app = bin.path().join("flint-app");
        std::fs::write(&app, "#!/bin/sh\n: > \"$2\"\n").unwrap();
        std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (_, cgi_dir, db) =
            prepare(dir.path(), &app, Path::new("/usr/bin/php-cgi"), None).unwrap();
        give_database(&db, "nobody").unwrap();
        let uid = |p: &Path| std::fs::metadata(p).unwrap().uid();
        let nobody = uid(&db);
        assert_ne!(nobody, 0);
        assert_eq!(uid(db.parent().unwrap()), nobody);
        for root_owned in [
            cgi_dir.clone(),
            cgi_dir.join(CGI_PROGRAM),
            cgi_dir.join(php::SCRIPT),
        ] {
            assert_eq!(uid(&root_owned), 0, "{}", root_owned.display());
        }
    }

    /// `nobody` as root; else the user running the test (whom its files may be given to).
    fn web_user() -> String {
        if root() {
            return "nobody".to_owned();
        }
        let me = nix::unistd::geteuid().as_raw().to_string();
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        let line = passwd.lines().find(|l| l.split(':').nth(2) == Some(&me));
        line.and_then(|l| l.split(':').next())
            .expect("the test's user in /etc/passwd")
            .to_owned()
    }

    #[test]
    fn a_socket_is_the_web_users_and_its_groups_alone() {
        let user = web_user();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.sock");
        let _listener = UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        give_sockets(&[&path], &user).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        let (uid, gid) = ids(&user).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (uid, gid));
        assert_eq!(meta.mode() & 0o777, 0o660);
        // Root still connects, as the lab's own processes do.
        UnixStream::connect(&path).unwrap();
        assert!(give_sockets(&[&path], "no-such-user-here").is_err());
    }
}

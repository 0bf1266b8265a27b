//! With `symlinks_outside_root = true` a link in the document root may lead anywhere, but not
//! into a CGI directory: a program's bytes (its source, its secrets) are never served as a
//! file, whether the link names the program or a directory above it.

use std::os::unix::fs::symlink;

use crate::cgi_support::*;
use crate::common::*;

#[test]
fn a_link_out_of_the_root_into_a_cgi_directory_is_not_served() {
    let scripts = Scripts::new();
    scripts.add("hello", &format!("# SECRET-CGI\n{HELLO}"));
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("o.txt"), "outside").unwrap();
    let srv = start(&scripts, |c| c.symlinks_outside_root = true);
    let root = srv.root.path();
    symlink(scripts.path().join("hello"), root.join("prog")).unwrap();
    symlink(scripts.path(), root.join("bin")).unwrap();
    symlink(outside.path().join("o.txt"), root.join("o.txt")).unwrap();
    for target in ["/prog", "/bin/hello"] {
        let r = ask(&srv, &get(target));
        let text = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, 404, "{target}: {text}");
        assert!(!text.contains("SECRET"), "{target}: {text}");
    }
    // Other links out of the root are still followed, and the program still runs.
    let r = ask(&srv, &get("/o.txt"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"outside"[..]));
    let r = ask(&srv, &get("/cgi-bin/hello"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello\n"[..]));
}

#[test]
fn a_link_in_the_root_to_a_script_is_not_served_as_a_file() {
    // `x.cgi` and `x.php` would run; under another name (a link, or a directory's index) the
    // same file went out as its source.
    let scripts = Scripts::new();
    for outside in [false, true] {
        let srv = start(&scripts, |c| {
            c.cgi_extensions = vec![".cgi".into()];
            c.fastcgi
                .push("*.php=unix:/nonexistent/flint-test.sock".parse().unwrap());
            c.symlinks_outside_root = outside;
        });
        let root = srv.root.path();
        write_script(&root.join("secret.cgi"), "# SECRET-CGI\nexit 1\n");
        std::fs::write(root.join("secret.php"), "<?php $pw = 'SECRET-PHP';\n").unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        symlink("../secret.php", root.join("d/index.html")).unwrap();
        symlink("secret.cgi", root.join("c.txt")).unwrap();
        symlink("secret.php", root.join("p.txt")).unwrap();
        for target in ["/c.txt", "/p.txt", "/d/"] {
            let r = ask(&srv, &get(target));
            let text = String::from_utf8_lossy(&r.body);
            assert_eq!(r.status, 404, "{target} (outside: {outside}): {text}");
            assert!(!text.contains("SECRET"), "{target}: {text}");
        }
        let r = ask(&srv, &get("/a.txt"));
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
    }
}

//! Directory listings: off by default; sorted, escaped, with sizes and dates; dot-names and
//! anything outside the root left out.

use std::os::unix::fs::symlink;

use crate::files_support::Site;
use serve::config::Dotfiles;

const FILES: &[(&str, &[u8])] = &[
    ("docs/b.txt", b"bb"),
    ("docs/a.txt", b"a"),
    ("docs/Z.txt", b"zzz"),
    ("docs/<b>&\"q'.txt", b"12345"),
    ("docs/a b:c?.txt", b""),
    ("docs/sub/x", b"x"),
    ("docs/.secret", b"s"),
    ("docs/.hidden_dir/x", b"x"),
    ("withindex/index.html", b"home"),
    ("empty/.keep", b""),
];

fn site_with(tune: impl FnOnce(&mut serve::Config)) -> Site {
    let site = Site::with(FILES, |c| {
        c.autoindex = true;
        tune(c);
    });
    let outside = site.dir.path().join("outside.txt");
    std::fs::write(&outside, b"outside").unwrap();
    let docs = site.root().join("docs");
    symlink(&outside, docs.join("link_out")).unwrap();
    symlink("a.txt", docs.join("link_in")).unwrap();
    site
}

fn listing(site: &mut Site, target: &str) -> String {
    let r = site.get(target, &[]);
    assert_eq!(r.status, 200, "{target}");
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    String::from_utf8(r.body).unwrap()
}

/// The link targets of a listing, in order.
fn hrefs(html: &str) -> Vec<&str> {
    html.split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect()
}

#[test]
fn directories_without_index_are_404_unless_autoindex() {
    let mut site = Site::new(FILES);
    assert_eq!(site.get("/docs/", &[]).status, 404);
    assert_eq!(site.get("/", &[]).status, 404);
    let mut site = site_with(|_| {});
    assert_eq!(site.get("/docs/", &[]).status, 200);
    // An index file still wins.
    assert_eq!(site.get("/withindex/", &[]).body, b"home");
    // Without the slash: the usual redirect.
    assert_eq!(site.get("/docs", &[]).status, 301);
}

#[test]
fn listing_is_sorted_directories_first_and_escaped() {
    let mut site = site_with(|_| {});
    let html = listing(&mut site, "/docs/");
    assert_eq!(
        hrefs(&html),
        [
            "../",
            "sub/",
            "%3Cb%3E%26%22q%27.txt",
            "Z.txt",
            "a%20b%3Ac%3F.txt",
            "a.txt",
            "b.txt",
            "link_in",
        ]
    );
    assert!(
        html.contains(">&lt;b&gt;&amp;&quot;q&#39;.txt</a>"),
        "{html}"
    );
    assert!(!html.contains("<b>&"), "a raw name leaked: {html}");
    assert!(html.contains("<title>Index of /docs/</title>"));
    // Sizes in bytes; directories have none; dates as HTTP dates.
    assert!(html.contains("Z.txt</a></td><td>"));
    let row = html.lines().find(|l| l.contains(">Z.txt<")).unwrap();
    assert!(row.ends_with("<td class=\"n\">3</td></tr>"), "{row}");
    assert!(row.contains(" GMT</td>"), "{row}");
    let row = html.lines().find(|l| l.contains(">sub/<")).unwrap();
    assert!(row.contains("<td class=\"n\">-</td>"), "{row}");
}

#[test]
fn listing_leaves_out_dotfiles_and_links_out_of_the_root() {
    let mut site = site_with(|_| {});
    let html = listing(&mut site, "/docs/");
    for absent in [".secret", ".hidden_dir", "link_out", "outside"] {
        assert!(!html.contains(absent), "{absent} listed: {html}");
    }
    let root = listing(&mut site, "/");
    assert!(!hrefs(&root).contains(&"../"), "no parent above the root");
    assert!(hrefs(&root).contains(&"docs/"));
    assert_eq!(hrefs(&listing(&mut site, "/empty/")), ["../"]);
    // Hidden directories are not listed either.
    assert_eq!(site.get("/docs/.hidden_dir/", &[]).status, 404);

    let mut site = site_with(|c| {
        c.dotfiles = Dotfiles::Allow;
        c.symlinks_outside_root = true;
    });
    let links = hrefs(&listing(&mut site, "/docs/")).join(" ");
    for present in [".hidden_dir/", ".secret", "link_out"] {
        assert!(links.contains(present), "{present} missing: {links}");
    }
}

#[test]
fn head_and_large_listings() {
    let mut site = site_with(|_| {});
    let get = site.get("/docs/", &[]);
    let head = site.method("HEAD", "/docs/", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.header("Content-Length"), get.header("Content-Length"));
    let big = site.root().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..600 {
        std::fs::write(big.join(format!("file-with-a-long-name-{i:04}.txt")), b"x").unwrap();
    }
    let r = site.get("/big/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body_kind, "shared",
        "a large listing is not copied into the output buffer"
    );
    let html = String::from_utf8(r.body).unwrap();
    assert_eq!(hrefs(&html).len(), 601);
    assert!(html.find("-0000.txt").unwrap() < html.find("-0599.txt").unwrap());
    // Not cached: a new file shows at once.
    std::fs::write(site.root().join("docs/new.txt"), b"n").unwrap();
    assert!(listing(&mut site, "/docs/").contains("new.txt"));
}

/// A directory larger than the limit: that many rows, then one line saying how many more there
/// are; a dot-name past the limit is not counted among them.
#[test]
fn listings_stop_at_their_limit_and_say_how_many_more_there_are() {
    let mut site = site_with(|c| c.autoindex_max_entries = 40);
    let big = site.root().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..47 {
        std::fs::write(big.join(format!("f{i:03}")), b"").unwrap();
    }
    std::fs::write(big.join(".hidden"), b"").unwrap();
    let html = listing(&mut site, "/big/");
    assert_eq!(hrefs(&html).len(), 41, "the parent and 40 entries");
    assert!(
        html.contains("7 more entries not listed (a listing shows at most 40)"),
        "{html}"
    );
    let mut one_more = site_with(|c| c.autoindex_max_entries = 46);
    std::fs::create_dir(one_more.root().join("big")).unwrap();
    for i in 0..47 {
        std::fs::write(one_more.root().join(format!("big/f{i:03}")), b"").unwrap();
    }
    assert!(listing(&mut one_more, "/big/").contains(">1 more entry not listed"));
}

#[test]
fn the_default_limit_is_ten_thousand_entries() {
    assert_eq!(serve::Config::default().autoindex_max_entries, 10_000);
    let mut site = site_with(|_| {});
    let big = site.root().join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..10_003 {
        std::fs::File::create(big.join(format!("{i}"))).unwrap();
    }
    let html = listing(&mut site, "/big/");
    assert_eq!(hrefs(&html).len(), 10_001);
    assert!(
        html.contains(">3 more entries not listed"),
        "{}",
        &html[html.len() - 300..]
    );
}

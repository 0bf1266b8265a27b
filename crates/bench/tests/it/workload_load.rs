//! Workloads: TOML, the original WebSTONE filelist, command-line paths; errors name file and line.

use bench::workload::{PagePicker, Workload, WorkloadError};
use std::path::PathBuf;

/// The paper's section 7 filelist, as its authors wrote it (comment line included).
const PAPER_FILELIST: &str = "\
#This file is used to configure the pages and files to be tested for.
6
40 3
/file3k.html
/file4k.html
/file5k.html
5 3
/file10k.html
/file17k.html
/file20k.html
5 2
/file5m.html
/file1m.html
20 3
/file6k.html
/file7k.html
/file200k.html
20 2
/file3m.html
/file21k.html
10 2
/file500k.html
/file13k.html
";

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn load_text(name: &str, text: &str) -> Result<Workload, WorkloadError> {
    let dir = tempfile::tempdir().unwrap();
    Workload::load(&write(&dir, name, text))
}

/// The error's text, and its line when it is a syntax error.
fn error_of(name: &str, text: &str) -> (String, Option<usize>) {
    let e = load_text(name, text).expect_err("workload should be rejected");
    let line = match &e {
        WorkloadError::Syntax { line, .. } => Some(*line),
        _ => None,
    };
    (e.to_string(), line)
}

#[test]
fn paper_filelist_is_read_unchanged() {
    let w = load_text("filelist", PAPER_FILELIST).unwrap();
    assert_eq!(w.pages.len(), 6);
    let weights: Vec<f64> = w.pages.iter().map(|p| p.weight).collect();
    assert_eq!(weights, [40.0, 5.0, 5.0, 20.0, 20.0, 10.0]);
    assert_eq!(w.pages[0].name, "page 0");
    assert_eq!(w.urls.len(), 15);
    let page2: Vec<&str> = w.page_urls(2).collect();
    assert_eq!(page2, ["/file5m.html", "/file1m.html"]);
}

#[test]
fn filelist_comments_anywhere_and_blank_lines_are_ignored() {
    let text = "\n# header comment\n\n2   # two pages\n\n1 1 # weight, count\n/a.html # the page\n\n3 2\n/b.html\n   \n/c.gif\n";
    let w = load_text("list", text).unwrap();
    assert_eq!(w.urls, ["/a.html", "/b.html", "/c.gif"]);
    assert_eq!(w.pages[1].weight, 3.0);
    assert_eq!(w.pages[1].files, [1, 2]);
}

#[test]
fn filelist_page_line_with_one_field_names_file_and_line() {
    // Line 7 holds "40" where "weight file-count" belongs.
    let text = "2\n1 2\n/a.html\n/b.html\n\n# next page\n40\n/c.html\n";
    let (msg, line) = error_of("workload.txt", text);
    assert_eq!(line, Some(7));
    assert!(
        msg.ends_with("workload.txt:7: expected \"weight file-count\", found \"40\""),
        "{msg}"
    );
}

#[test]
fn filelist_with_fewer_pages_than_its_header_is_rejected() {
    let (msg, line) = error_of("fl", "# c\n3\n1 1\n/a.html\n");
    assert_eq!(line, Some(2), "{msg}");
    assert!(
        msg.contains("says 3 pages") && msg.contains("has 1"),
        "{msg}"
    );
}

#[test]
fn filelist_with_more_pages_than_its_header_is_rejected() {
    let (msg, line) = error_of("fl", "1\n1 1\n/a.html\n1 1\n/b.html\n");
    assert_eq!(line, Some(4), "{msg}");
}

#[test]
fn filelist_page_short_of_files_points_at_the_next_page_line() {
    // Page 0 says 3 files but the next page's header comes after two.
    let (msg, line) = error_of("fl", "2\n1 3\n/a.html\n/b.html\n1 1\n/c.html\n");
    assert_eq!(line, Some(5), "{msg}");
    assert!(msg.contains("expected a URL path"), "{msg}");
}

#[test]
fn filelist_ending_inside_a_page_is_rejected() {
    let (msg, line) = error_of("fl", "1\n1 3\n/a.html\n");
    assert_eq!(line, Some(2), "{msg}");
    assert!(msg.contains("says 3 files"), "{msg}");
}

#[test]
fn filelist_weights_must_be_positive_and_finite() {
    for bad in ["0", "-5", "inf", "NaN"] {
        let (msg, line) = error_of("fl", &format!("1\n{bad} 1\n/a.html\n"));
        assert_eq!(line, Some(2), "{bad}: {msg}");
    }
}

#[test]
fn filelist_page_without_files_is_rejected() {
    let (_, line) = error_of("fl", "1\n10 0\n");
    assert_eq!(line, Some(2));
}

#[test]
fn filelist_paths_must_start_with_slash() {
    let (msg, line) = error_of("fl", "1\n1 1\nfile3k.html\n");
    assert_eq!(line, Some(3), "{msg}");
}

#[test]
fn zero_page_filelist_is_rejected() {
    let (_, line) = error_of("fl", "0\n");
    assert_eq!(line, Some(1));
}

#[test]
fn webstone_limits_are_not_imposed() {
    // 120 pages of 60 files: beyond the 1995 C arrays (100 pages, 50 files per page).
    let mut text = String::from("120\n");
    for p in 0..120 {
        text.push_str("1 60\n");
        for f in 0..60 {
            text.push_str(&format!("/p{p}/f{f}.html\n"));
        }
    }
    let w = load_text("big", &text).unwrap();
    assert_eq!(w.pages.len(), 120);
    assert_eq!(w.urls.len(), 7200);
}

const TOML: &str = r#"
# a site
[[page]]
name = "home"
weight = 40
files = ["/file3k.html", "/file4k.html"]

[[page]]
weight = 2.5
files = ["/file3k.html", "/img/logo1k.gif"]
"#;

#[test]
fn toml_workload_reads_names_weights_and_files() {
    let w = load_text("site.toml", TOML).unwrap();
    assert_eq!(w.pages[0].name, "home");
    assert_eq!(w.pages[0].weight, 40.0);
    assert_eq!(w.pages[1].name, "page 1", "default name");
    assert_eq!(w.pages[1].weight, 2.5);
    assert_eq!(w.urls, ["/file3k.html", "/file4k.html", "/img/logo1k.gif"]);
}

#[test]
fn same_path_in_two_pages_is_one_url() {
    let w = load_text("site.toml", TOML).unwrap();
    assert_eq!(w.pages[0].files[0], w.pages[1].files[0]);
    assert_eq!(w.pages[1].files, [0, 2]);
}

#[test]
fn toml_unknown_key_is_an_error_naming_it_and_its_line() {
    let text = "[[page]]\nweight = 1\nfiles = [\"/a\"]\nwieght = 3\n";
    let (msg, line) = error_of("w.toml", text);
    assert!(msg.contains("wieght"), "{msg}");
    assert!(msg.contains("w.toml:4: unknown field `wieght`"), "{msg}");
    assert_eq!(line, Some(4), "{msg}");
}

#[test]
fn toml_unknown_top_level_key_is_an_error() {
    let (msg, _) = error_of(
        "w.toml",
        "pages = 3\n[[page]]\nweight = 1\nfiles = [\"/a\"]\n",
    );
    assert!(msg.contains("pages"), "{msg}");
}

#[test]
fn toml_syntax_error_names_the_line() {
    let text = "[[page]]\nweight = 1\nfiles = [\"/a\",\n\n]]\n";
    let (msg, line) = error_of("w.toml", text);
    assert!(line.unwrap() >= 3, "{msg}");
}

#[test]
fn toml_bad_path_names_its_line() {
    let text = "[[page]]\nweight = 1\nfiles = [\n  \"/ok.html\",\n  \"/has space.gif\",\n]\n";
    let (msg, line) = error_of("w.toml", text);
    assert_eq!(line, Some(5), "{msg}");
    assert!(msg.contains("whitespace"), "{msg}");
}

#[test]
fn toml_bad_weight_and_empty_files_name_their_lines() {
    let (_, line) = error_of("w.toml", "[[page]]\nfiles = [\"/a\"]\nweight = -1\n");
    assert_eq!(line, Some(3));
    let (_, line) = error_of("w.toml", "[[page]]\nweight = 1\n\nfiles = []\n");
    assert_eq!(line, Some(4));
}

#[test]
fn weights_each_finite_whose_sum_is_not_are_refused_naming_the_line() {
    let (msg, line) = error_of(
        "w.toml",
        "[[page]]\nweight = 1e308\nfiles = [\"/a\"]\n[[page]]\nweight = 1e308\nfiles = [\"/b\"]\n",
    );
    assert_eq!(line, Some(5), "{msg}");
    assert!(msg.contains("add up to more than a number holds"), "{msg}");
    let (msg, line) = error_of("fl", "2\n1e308 1\n/a\n1e308 1\n/b\n");
    assert_eq!(line, Some(4), "{msg}");
    assert!(msg.contains("add up to more than a number holds"), "{msg}");
    let e = Workload::from_pages([
        ("a".to_string(), 1e308, vec!["/a"]),
        ("b".to_string(), 1e308, vec!["/b"]),
    ])
    .expect_err("refused");
    assert!(e.to_string().contains("page \"b\""), "{e}");
    // Large weights that add up are weights.
    assert!(load_text("fl", "2\n1e307 1\n/a\n1e307 1\n/b\n").is_ok());
}

#[test]
fn a_filelist_whose_first_line_is_not_a_whole_number_says_what_it_must_be() {
    for first in ["1.5", "2 pages"] {
        let (msg, line) = error_of("fl", &format!("{first}\n1 1\n/a\n"));
        assert_eq!(line, Some(1), "{msg}");
        assert!(
            msg.contains(&format!(
                "a filelist's first line is its number of pages, a whole number such as 3; \
                 found {first:?}"
            )),
            "{msg}"
        );
    }
}

#[test]
fn toml_missing_weight_is_an_error() {
    let (msg, _) = error_of("w.toml", "[[page]]\nfiles = [\"/a\"]\n");
    assert!(msg.contains("weight"), "{msg}");
}

#[test]
fn toml_without_pages_is_rejected() {
    let (msg, _) = error_of("w.toml", "# nothing\n");
    assert!(msg.contains("at least one page"), "{msg}");
}

#[test]
fn missing_file_is_an_io_error_naming_it() {
    let e = Workload::load(std::path::Path::new("/nonexistent/flint.toml")).unwrap_err();
    assert!(matches!(e, WorkloadError::Io { .. }));
    assert!(e.to_string().contains("/nonexistent/flint.toml"));
}

#[test]
fn to_toml_round_trips() {
    let w = load_text("filelist", PAPER_FILELIST).unwrap();
    let back = load_text("w.toml", &w.to_toml()).unwrap();
    assert_eq!(back, w);
    let w = load_text("site.toml", TOML).unwrap();
    assert_eq!(load_text("w.toml", &w.to_toml()).unwrap(), w);
}

#[test]
fn from_paths_gives_one_equal_page_per_path() {
    let w = Workload::from_paths(&["/a.html".into(), "/b.gif".into(), "/a.html".into()]).unwrap();
    assert_eq!(w.pages.len(), 3);
    assert_eq!(w.urls, ["/a.html", "/b.gif"]);
    assert!(w.pages.iter().all(|p| p.weight == w.pages[0].weight));
    assert_eq!(w.pages[1].name, "/b.gif");
    assert_eq!(w.pages[2].files, [0]);
}

#[test]
fn from_paths_rejects_empty_and_bad_paths() {
    assert!(Workload::from_paths(&[]).is_err());
    assert!(Workload::from_paths(&["a.html".into()]).is_err());
    assert!(Workload::from_paths(&["/a\nb".into()]).is_err());
    assert!(Workload::from_paths(&["/a\tb".into()]).is_err());
}

#[test]
fn picker_follows_the_weights() {
    let w = load_text("filelist", PAPER_FILELIST).unwrap();
    let picker = PagePicker::new(&w);
    let mut rng = fastrand::Rng::with_seed(7);
    let mut counts = [0u64; 6];
    let n = 200_000;
    for _ in 0..n {
        counts[picker.pick(&mut rng)] += 1;
    }
    for (c, p) in counts.iter().zip(&w.pages) {
        let share = *c as f64 / n as f64 * 100.0;
        assert!((share - p.weight).abs() < 0.6, "{} got {share}%", p.name);
    }
}

#[test]
fn picker_is_reproducible_per_seed_and_handles_one_page() {
    let w = load_text("site.toml", TOML).unwrap();
    let picker = PagePicker::new(&w);
    let run = |seed| {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..100).map(|_| picker.pick(&mut rng)).collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    let one = Workload::from_paths(&["/x".into()]).unwrap();
    let mut rng = fastrand::Rng::with_seed(3);
    assert!((0..10).all(|_| PagePicker::new(&one).pick(&mut rng) == 0));
}

#[test]
fn picker_never_picks_a_page_out_of_range() {
    let w = Workload::from_pages([
        ("a".to_string(), 1e-300, vec!["/a"]),
        ("b".to_string(), 1e300, vec!["/b"]),
    ])
    .unwrap();
    let picker = PagePicker::new(&w);
    let mut rng = fastrand::Rng::with_seed(9);
    assert!((0..10_000).all(|_| picker.pick(&mut rng) < 2));
}

#[test]
fn filelist_errors_say_one_file_and_one_page_in_the_singular() {
    let (msg, _) = error_of("fl", "1\n1 1\n");
    assert!(msg.contains("says 1 file;"), "{msg}");
    let (msg, _) = error_of("fl", "1\n1 1\n/a.html\n1 1\n/b.html\n");
    assert!(msg.contains("says 1 page;"), "{msg}");
}

#[test]
fn a_toml_workload_may_name_its_origin_for_a_run_without_a_url() {
    let dir = tempfile::tempdir().unwrap();
    let text = "origin = \"https://shop.example:8443\"\n\n[[page]]\nweight = 1\nfiles = [\"/\"]\n";
    let path = write(&dir, "site.toml", text);
    let w = Workload::load(&path).expect("origin is a workload key");
    assert_eq!(w.urls, ["/"]);
    assert_eq!(
        Workload::origin_of(&path).unwrap().as_deref(),
        Some("https://shop.example:8443")
    );
    // Without one, and in a filelist, there is none.
    let plain = write(
        &dir,
        "plain.toml",
        "[[page]]\nweight = 1\nfiles = [\"/\"]\n",
    );
    assert_eq!(Workload::origin_of(&plain).unwrap(), None);
    let list = write(&dir, "filelist", PAPER_FILELIST);
    assert_eq!(Workload::origin_of(&list).unwrap(), None);
    // Not a string: the file and line.
    let bad = write(
        &dir,
        "bad.toml",
        "\norigin = 8443\n[[page]]\nweight = 1\nfiles = [\"/\"]\n",
    );
    let err = Workload::origin_of(&bad).unwrap_err().to_string();
    assert!(
        err.contains("bad.toml:2: origin is the server's URL"),
        "{err}"
    );
}

//! File sets: the size convention, the paper's four mixes, and writing trees to disk.

use bench::fileset::{mix_workload, size_from_name, write_filelist, write_mix, FilesetError, Mix};
use bench::Workload;
use std::time::Instant;

fn page_sizes(w: &Workload) -> Vec<u64> {
    (0..w.pages.len())
        .map(|p| w.page_urls(p).map(|u| size_from_name(u).unwrap()).sum())
        .collect()
}

#[test]
fn size_convention_reads_bytes_kib_and_mib() {
    assert_eq!(size_from_name("/file500.html"), Some(500));
    assert_eq!(size_from_name("/file3k.html"), Some(3072));
    assert_eq!(size_from_name("file5m.html"), Some(5 * 1024 * 1024));
    assert_eq!(size_from_name("/a/b/photo48K.JPG"), Some(48 * 1024));
    assert_eq!(size_from_name("/x/clip1M"), Some(1024 * 1024));
    assert_eq!(size_from_name("/file0.gif"), Some(0));
}

#[test]
fn names_off_the_size_convention_have_no_size() {
    for name in [
        "/index.html",
        "/filek.html",
        "/",
        "",
        "/file3x.html",
        "/dir5k/index.html",
    ] {
        assert_eq!(size_from_name(name), None, "{name}");
    }
    assert_eq!(
        size_from_name("/file99999999999999999999m.mpg"),
        None,
        "overflow"
    );
}

#[test]
fn mixed_mix_is_the_papers_filelist_with_its_page_sizes() {
    let w = mix_workload(Mix::Mixed);
    let weights: Vec<f64> = w.pages.iter().map(|p| p.weight).collect();
    assert_eq!(weights, [40.0, 5.0, 5.0, 20.0, 20.0, 10.0]);
    // "Page size" of the paper's six blocks (Netsite, NCSA and CERN alike).
    assert_eq!(
        page_sizes(&w),
        [12288, 48128, 6291456, 218112, 3167232, 525312]
    );
    let page0: Vec<&str> = w.page_urls(0).collect();
    assert_eq!(page0, ["/file3k.html", "/file4k.html", "/file5k.html"]);
}

#[test]
fn every_mix_has_4_to_8_pages_weighing_100_and_sized_names() {
    for mix in Mix::ALL {
        let w = mix_workload(mix);
        assert!((4..=8).contains(&w.pages.len()), "{mix}");
        let total: f64 = w.pages.iter().map(|p| p.weight).sum();
        assert_eq!(total, 100.0, "{mix}");
        for u in &w.urls {
            assert!(size_from_name(u).is_some(), "{mix}: {u}");
        }
    }
}

#[test]
fn modem_pages_stay_under_20_kb_and_start_with_html() {
    let w = mix_workload(Mix::Modem);
    for (p, size) in page_sizes(&w).into_iter().enumerate() {
        assert!(size < 20_000, "page {p}: {size} bytes");
        assert!(w.page_urls(p).next().unwrap().ends_with(".html"));
    }
}

#[test]
fn general_files_are_1_to_100_kb() {
    for u in &mix_workload(Mix::General).urls {
        let size = size_from_name(u).unwrap();
        assert!((1024..=100 * 1024).contains(&size), "{u}: {size}");
    }
}

#[test]
fn media_files_run_from_20_kb_to_megabytes_with_movies_and_sounds() {
    let w = mix_workload(Mix::Media);
    for u in &w.urls {
        let size = size_from_name(u).unwrap();
        assert!(size >= 20 * 1024, "{u}: {size}");
    }
    assert!(w.urls.iter().any(|u| size_from_name(u).unwrap() >= 2 << 20));
    for ext in [".mpg", ".mov", ".aiff", ".jpg"] {
        assert!(w.urls.iter().any(|u| u.ends_with(ext)), "{ext}");
    }
}

#[test]
fn mix_names_parse_and_print() {
    for mix in Mix::ALL {
        assert_eq!(mix.to_string().parse::<Mix>().unwrap(), mix);
    }
    assert_eq!("MEDIA".parse::<Mix>().unwrap(), Mix::Media);
    assert!(matches!(
        "dialup".parse::<Mix>(),
        Err(FilesetError::UnknownMix(_))
    ));
}

#[test]
fn write_mix_writes_every_file_at_its_size_and_a_workload_that_loads_back() {
    let dir = tempfile::tempdir().unwrap();
    for mix in [Mix::Modem, Mix::Mixed] {
        let path = write_mix(dir.path(), mix).unwrap();
        assert_eq!(path, dir.path().join("workload.toml"));
        let w = Workload::load(&path).unwrap();
        assert_eq!(w, mix_workload(mix));
        for u in &w.urls {
            let meta = std::fs::metadata(dir.path().join(&u[1..])).unwrap();
            assert_eq!(meta.len(), size_from_name(u).unwrap(), "{u}");
        }
    }
}

#[test]
fn general_mix_is_small_and_fast_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    write_mix(dir.path(), Mix::General).unwrap();
    let took = start.elapsed();
    let total: u64 = mix_workload(Mix::General)
        .urls
        .iter()
        .map(|u| size_from_name(u).unwrap())
        .sum();
    assert!(total < 5_000_000, "{total} bytes");
    // Generous for a loaded 2-core box with its disk shared; it takes milliseconds.
    assert!(took.as_secs_f64() < 30.0, "{took:?}");
}

#[test]
fn contents_are_deterministic_and_rewriting_is_idempotent() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write_mix(a.path(), Mix::Modem).unwrap();
    write_mix(b.path(), Mix::Modem).unwrap();
    write_mix(b.path(), Mix::Modem).unwrap();
    for u in &mix_workload(Mix::Modem).urls {
        let x = std::fs::read(a.path().join(&u[1..])).unwrap();
        let y = std::fs::read(b.path().join(&u[1..])).unwrap();
        assert!(x == y, "{u} differs between two writes");
    }
    let html = std::fs::read_to_string(a.path().join("modem/home4k.html")).unwrap();
    assert!(html.starts_with("<html>") && html.ends_with("</html>\n"));
    let gif = std::fs::read(a.path().join("modem/logo3k.gif")).unwrap();
    let distinct = gif.iter().collect::<std::collections::HashSet<_>>().len();
    assert!(
        distinct > 200,
        "binary files look random: {distinct} distinct bytes"
    );
}

#[test]
fn write_filelist_creates_the_papers_files() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    let text = "# the paper's\n6\n40 3\n/file3k.html\n/file4k.html\n/file5k.html\n5 3\n/file10k.html\n\
                /file17k.html\n/file20k.html\n5 2\n/file5m.html\n/file1m.html\n20 3\n/file6k.html\n\
                /file7k.html\n/file200k.html\n20 2\n/file3m.html\n/file21k.html\n10 2\n/file500k.html\n\
                /file13k.html\n";
    std::fs::write(&list, text).unwrap();
    let root = dir.path().join("htdocs");
    let files = write_filelist(&root, &list).unwrap();
    assert_eq!(files.len(), 15);
    assert_eq!(
        std::fs::metadata(root.join("file5m.html")).unwrap().len(),
        5 << 20
    );
    assert_eq!(
        std::fs::metadata(root.join("file3k.html")).unwrap().len(),
        3072
    );
}

#[test]
fn write_filelist_names_bad_names_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n1 3\n/file1k.html\n/index.html\n/logo.gif\n").unwrap();
    let root = dir.path().join("htdocs");
    let e = write_filelist(&root, &list).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("/index.html") && msg.contains("/logo.gif"),
        "{msg}"
    );
    assert!(!msg.contains("/file1k.html"), "{msg}");
    assert!(!root.join("file1k.html").exists(), "nothing written");
}

#[test]
fn write_filelist_refuses_paths_that_leave_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n1 1\n/../escape1k.html\n").unwrap();
    let root = dir.path().join("htdocs");
    assert!(matches!(
        write_filelist(&root, &list),
        Err(FilesetError::Escapes(_))
    ));
    assert!(!dir.path().join("escape1k.html").exists());
}

#[test]
fn write_filelist_refuses_absurd_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n1 1\n/huge5000m.mpg\n").unwrap();
    let e = write_filelist(dir.path(), &list).unwrap_err();
    assert!(matches!(e, FilesetError::TooLarge(_)), "{e}");
}

#[test]
fn write_filelist_reports_workload_errors_with_line() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n1\n/a1k.html\n").unwrap();
    let msg = write_filelist(dir.path(), &list).unwrap_err().to_string();
    assert!(msg.contains("filelist:2:"), "{msg}");
}

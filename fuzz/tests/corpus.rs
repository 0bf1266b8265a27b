//! Replays the corpus through the same checks the fuzz targets run, without AFL: every input the
//! fuzzers kept, and every crash they found (saved in the corpus once fixed), stays a regression
//! test of the parsers.

use std::fs;
use std::panic;
use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        // afl-cmin's scratch files start with a dot; they are not inputs.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "{} holds only {} inputs",
        dir.display(),
        files.len()
    );
    let mut failed = Vec::new();
    for file in &files {
        let data = fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if panic::catch_unwind(|| check(&data)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} inputs fail their checks: {failed:#?}",
        failed.len()
    );
}

#[test]
fn request_corpus_passes_its_checks() {
    replay("request", flint_fuzz::request::check);
}

#[test]
fn h2_corpus_passes_its_checks() {
    replay("h2", flint_fuzz::h2::check);
}

#[test]
fn response_corpus_passes_its_checks() {
    replay("response", flint_fuzz::response::check);
}

#[test]
fn fcgi_corpus_passes_its_checks() {
    replay("fcgi", flint_fuzz::fcgi::check);
}

#[test]
fn cgihead_corpus_passes_its_checks() {
    replay("cgihead", flint_fuzz::cgihead::check);
}

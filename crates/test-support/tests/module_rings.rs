//! The architecture rule on every crate of the workspace: modules form layers, no two files
//! import each other, directly or through a ring (ARCHITECTURE.md, Invariants); and the checker
//! that reads it from source, on small crates written here.

use std::path::Path;
use test_support::module_rings::rings;

/// Crates that still hold a ring while it is being broken on another branch; emptied once that
/// work is merged, so that every crate is held to its layers. Each must still have a ring: one
/// whose ring is gone is named, to be taken off the list.
const STILL_RINGED: &[&str] = &[];

#[test]
fn no_crate_has_files_importing_each_other_through_a_ring() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut entries: Vec<_> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    entries.sort();
    let names: Vec<String> = (entries.iter())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    // The walk found the workspace, itself included: an empty walk would pass for nothing.
    for listed in STILL_RINGED {
        assert!(
            names.iter().any(|n| n == listed),
            "{listed} is no crate: {names:?}"
        );
    }
    assert!(names.iter().any(|n| n == "test-support"), "{names:?}");
    assert!(names.iter().any(|n| n == "serve"), "{names:?}");
    let mut failures = Vec::new();
    for (dir, name) in entries.iter().zip(&names) {
        let found = rings(&dir.join("src"));
        if STILL_RINGED.contains(&name.as_str()) {
            // A crate whose ring is gone is held to its layers from now on.
            if found.is_empty() {
                failures.push(format!("{name} has no ring: remove it from STILL_RINGED"));
            }
            continue;
        }
        for ring in found {
            let ring = ring.to_string().replace('\n', "\n    ");
            failures.push(format!("{name}/src:\n    {ring}"));
        }
    }
    assert!(
        failures.is_empty(),
        "files importing each other through a ring:\n  {}",
        failures.join("\n\n  ")
    );
}

/// A crate's source written into a temporary directory, file by file.
struct Source(tempfile::TempDir);

impl Source {
    fn new() -> Source {
        Source(tempfile::tempdir().unwrap())
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[test]
fn a_ring_is_found_through_a_child_an_alias_and_a_use_group() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod b;\n");
    src.write(
        "a.rs",
        "mod inner;\n// use crate::b::Gone; in a comment is no edge\n",
    );
    src.write(
        "a/inner.rs",
        "use crate::b;\nfn f() { let _ = b::deep::F; }\n",
    );
    src.write("b.rs", "pub mod deep;\n");
    src.write(
        "b/deep.rs",
        "use crate::{a::inner::G, x};\nconst S: &str = \"crate::a::H\";\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    let ring = found[0].to_string();
    assert!(ring.contains("a/inner.rs -> b/deep.rs (F)"), "{ring}");
    assert!(ring.contains("b/deep.rs -> a/inner.rs (G)"), "{ring}");
    assert_eq!(found[0].files.len(), 2, "{ring}");
    // Once the inner file names the other side only in a comment, the ring is gone.
    src.write("a/inner.rs", "// crate::b::deep::F\n");
    assert!(rings(src.0.path()).is_empty());
}

#[test]
fn a_parent_and_its_child_are_one_file_but_a_sibling_back_is_a_ring() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod b;\n");
    // A child naming its parent's items is part of its parent: no ring.
    src.write("a.rs", "mod child;\npub struct Shared;\n");
    src.write("a/child.rs", "use super::Shared;\n");
    src.write("b.rs", "pub const N: u64 = 1;\n");
    assert!(rings(src.0.path()).is_empty());
    // A ring of three files through `super::`, each edge named in the failure.
    src.write("a.rs", "mod child;\npub struct Shared;\nuse crate::b::N;\n");
    src.write("b.rs", "pub const N: u64 = 1;\nfn f() { crate::c::g(); }\n");
    src.write("lib.rs", "mod a;\nmod b;\nmod c;\n");
    src.write("c.rs", "pub fn g() { let _ = super::a::Shared; }\n");
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    let ring = found[0].to_string();
    assert_eq!(
        ring, "a.rs -> b.rs (N)\nb.rs -> c.rs (g)\nc.rs -> a.rs (Shared)",
        "{ring}"
    );
}

#[test]
fn a_binary_beside_its_library_is_no_ring_with_it() {
    let src = Source::new();
    src.write("lib.rs", "pub mod a;\npub const ROOT: u64 = 1;\n");
    src.write("a.rs", "pub fn f() -> u64 { crate::ROOT }\n");
    // The binary reaches the library by its crate name and declares no module of it.
    src.write("main.rs", "use lib_name::a::f;\nfn main() { f(); }\n");
    assert!(rings(src.0.path()).is_empty());
}

#[test]
fn paths_in_strings_raw_strings_and_char_literals_are_no_edges() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod b;\n");
    src.write(
        "a.rs",
        "pub const X: u64 = 1;\nfn f() { let _ = crate::b::Y; }\n",
    );
    src.write(
        "b.rs",
        "pub const Y: u64 = 2;\nconst R: &str = r#\"crate::a::X\"#;\nconst C: char = '\"';\n/* café, naïve: crate::a::X */\nconst U: &str = \"ünï crate::a::X\";\nconst S: &str = \"crate::a::X\";\nfn g<'a>(s: &'a str) -> &'a str { s }\n",
    );
    assert!(rings(src.0.path()).is_empty(), "{:?}", rings(src.0.path()));
    src.write(
        "b.rs",
        "pub const Y: u64 = 2;\nfn g() { let _ = crate::a::X; }\n",
    );
    assert_eq!(rings(src.0.path()).len(), 1);
}

#[test]
fn a_ring_is_found_through_a_re_export_at_the_root_and_in_a_module() {
    let src = Source::new();
    src.write(
        "lib.rs",
        "mod a;\nmod b;\nmod files;\npub use b::Y;\npub use files::{cache, other as renamed};\n",
    );
    src.write("files.rs", "pub mod cache;\npub mod other;\n");
    src.write("files/other.rs", "pub const O: u64 = 3;\n");
    src.write(
        "a.rs",
        "pub const X: u64 = 1;\nfn f() { let _ = crate::Y; }\n",
    );
    src.write("b.rs", "pub const Y: u64 = 2;\n");
    src.write("files/cache.rs", "pub const SMALL: u64 = 4;\n");
    assert!(rings(src.0.path()).is_empty(), "{:?}", rings(src.0.path()));
    // `crate::Y` is b's: b naming a closes the ring.
    src.write(
        "b.rs",
        "pub const Y: u64 = 2;\nfn g() { let _ = crate::a::X; }\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].to_string(), "a.rs -> b.rs (Y)\nb.rs -> a.rs (X)");
    // Through a re-exported module (`crate::cache`) and a renamed one (`crate::renamed`).
    src.write("b.rs", "pub const Y: u64 = 2;\n");
    src.write("a.rs", "pub const X: u64 = 1;\nuse crate::cache::SMALL;\n");
    src.write(
        "files/cache.rs",
        "pub const SMALL: u64 = 4;\nuse crate::renamed::O;\n",
    );
    src.write(
        "files/other.rs",
        "pub const O: u64 = 3;\nfn h() { let _ = crate::a::X; }\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].to_string(),
        "a.rs -> files/cache.rs (SMALL)\nfiles/cache.rs -> files/other.rs (O)\nfiles/other.rs -> a.rs (X)"
    );
}

#[test]
fn a_glob_re_export_brings_only_the_names_its_module_does_not_define() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod c;\nmod hub;\n");
    src.write("hub.rs", "pub use crate::c::*;\npub const OWN: u64 = 0;\n");
    src.write(
        "c.rs",
        "pub const Y: u64 = 2;\nfn g() { let _ = crate::a::X; }\n",
    );
    // A name the glob's module defines itself is its own: a names hub, which names c.
    src.write(
        "a.rs",
        "pub const X: u64 = 1;\nfn f() { let _ = crate::hub::OWN; }\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].to_string().contains("a.rs -> hub.rs (OWN)"),
        "{found:?}"
    );
    // A name it does not define comes through the glob from c: hub is out of the ring.
    src.write(
        "a.rs",
        "pub const X: u64 = 1;\nfn f() { let _ = crate::hub::Y; }\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].to_string(), "a.rs -> c.rs (Y)\nc.rs -> a.rs (X)");
}

#[test]
fn a_path_attribute_module_is_the_module_it_declares() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod b;\n");
    src.write(
        "a.rs",
        "#[cfg(test)]\n#[path = \"a_helper.rs\"]\nmod helper;\npub struct Shared;\n",
    );
    // The helper names its parent (part of it) and b; b names the helper by its module.
    src.write(
        "a_helper.rs",
        "use super::Shared;\nuse crate::b::N;\npub struct H;\n",
    );
    src.write("b.rs", "pub const N: u64 = 1;\nuse crate::a::helper::H;\n");
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].to_string(),
        "a_helper.rs -> b.rs (N)\nb.rs -> a_helper.rs (H)"
    );
}

#[test]
fn modules_inside_inline_modules_have_the_inline_modules_in_their_path() {
    let src = Source::new();
    src.write("lib.rs", "mod a;\nmod b;\n");
    // `x` is `a::tests::x` (a/tests/x.rs), not `a::x`; `super::super` in `tests::deep` is `a`.
    src.write(
        "a.rs",
        "pub struct X;\nmod tests {\n    mod x;\n    fn f() { let _ = x::T; }\n    mod deep {\n        fn g() { let _ = super::super::Own; }\n    }\n}\npub struct Own;\n",
    );
    src.write("a/tests/x.rs", "pub struct T;\nuse crate::b::N;\n");
    src.write(
        "b.rs",
        "pub const N: u64 = 1;\nfn h() { let _ = crate::a::X; }\n",
    );
    let found = rings(src.0.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].to_string(),
        "a/tests/x.rs -> b.rs (N)\na.rs -> a/tests/x.rs (T)\nb.rs -> a.rs (X)"
    );
    // Two levels deep, `super::super::b` is a's child b, not the crate's b.
    src.write("a/b.rs", "pub const M: u64 = 1;\n");
    src.write(
        "a.rs",
        "mod b;\npub struct X;\nmod tests {\n    mod deep {\n        fn g() { let _ = super::super::b::M; }\n    }\n}\n",
    );
    assert!(rings(src.0.path()).is_empty(), "{:?}", rings(src.0.path()));
}

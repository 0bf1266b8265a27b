//! The architecture rule on a crate's source: modules form layers, no two files import each
//! other, directly or through a ring (ARCHITECTURE.md, Invariants). A file's uses of its
//! ancestors (`super::Session`, `crate::protocol::Worker` from under `protocol/`) are part of
//! it and not counted; every other path a file names (`use` lines, `crate::a::b`, `super::x::y`,
//! a child module's or an imported module's items) is an edge to the file that defines the
//! module it names. A path through a `use` goes on to what that `use` names (`crate::cache::X`
//! with `pub use files::cache;` at the root is `files/cache.rs`'s `X`; a glob `pub use a::*`
//! brings the names its module does not define), so a re-export hides no edge. A `#[path]`
//! file is the module its `mod` declares, and a `mod x;` inside an inline `mod tests { .. }` is
//! `tests::x`. The source is read as text (`source.rs`): comments, strings and char
//! literals are blanked first, so a path in a doc comment is no edge. A `main.rs` beside a
//! `lib.rs` is a crate of its own that reaches the library by its name, so it is kept as a file
//! apart rather than as the root.

mod reexports;
mod source;

use reexports::Tables;
use source::{
    blank, declared_children, expand, inline_modules, inline_path, path_expressions, use_trees,
    Inline,
};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// A module's path from the crate root (`["protocol", "h2"]`; the root is empty).
type Module = Vec<String>;

/// Files that import each other through a ring: the files (relative to the source directory
/// read) and every edge between two of them, with the items that make it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// The ring's files, sorted.
    pub files: Vec<PathBuf>,
    /// Each import from one file of the ring to another.
    pub edges: Vec<Edge>,
}

/// One file's imports from another: what breaking a ring means removing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The file that names the other.
    pub from: PathBuf,
    /// The file that defines what is named.
    pub to: PathBuf,
    /// The items named there (`(module)` for the module itself), sorted.
    pub items: Vec<String>,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (from, to) = (self.from.display(), self.to.display());
        write!(f, "{from} -> {to} ({})", self.items.join(", "))
    }
}

/// One edge a line, so that a failing test names what to break.
impl fmt::Display for Ring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, edge) in self.edges.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{edge}")?;
        }
        Ok(())
    }
}

/// Every ring among the `.rs` files under `src` (a crate's source directory), in the order of
/// their first file. An unreadable file or directory is a panic naming it: this runs in tests.
pub fn rings(src: &Path) -> Vec<Ring> {
    let mut files: BTreeMap<Module, PathBuf> = BTreeMap::new();
    let has_lib = src.join("lib.rs").is_file();
    collect(src, src, has_lib, &mut files);
    let mut texts: BTreeMap<PathBuf, String> = BTreeMap::new();
    for path in files.values() {
        let full = src.join(path);
        let text =
            std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
        texts.insert(path.clone(), text);
    }
    let blanked: BTreeMap<&PathBuf, String> = (texts.iter()).map(|(p, t)| (p, blank(t))).collect();
    rekey_path_modules(&mut files, &texts, &blanked);
    let tables = Tables::new(&files, &blanked);
    let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (module, path) in &files {
        let out = edges.entry(path.clone()).or_default();
        for (target, item) in references(module, &blanked[path], &tables) {
            out.entry(target).or_default().insert(item);
        }
    }
    let mut rings: Vec<Ring> = strongly_connected(&edges)
        .into_iter()
        .map(|files| {
            let mut ring_edges = Vec::new();
            for from in &files {
                for (to, items) in &edges[from] {
                    if files.contains(to) {
                        ring_edges.push(Edge {
                            from: from.clone(),
                            to: to.clone(),
                            items: items.iter().cloned().collect(),
                        });
                    }
                }
            }
            Ring {
                files,
                edges: ring_edges,
            }
        })
        .collect();
    rings.sort_by(|a, b| a.files.cmp(&b.files));
    rings
}

/// Every `.rs` file under `dir`, by the module its place defines (`a/mod.rs` and `a.rs` are
/// `a`); [`rekey_path_modules`] then moves the files a `#[path]` attribute names.
fn collect(root: &Path, dir: &Path, has_lib: bool, files: &mut BTreeMap<Module, PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            collect(root, &path, has_lib, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mut module: Module = (rel.with_extension("").iter())
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod")) {
                module.pop();
            }
            if module == ["lib"] || (module == ["main"] && !has_lib) {
                module.clear();
            }
            files.insert(module, rel);
        }
    }
}

/// A file named by `#[path = "x_tests.rs"] mod tests;` in `x.rs` is the module `x::tests`,
/// not `x_tests`: key it by the module its declaration defines.
fn rekey_path_modules(
    files: &mut BTreeMap<Module, PathBuf>,
    texts: &BTreeMap<PathBuf, String>,
    blanked: &BTreeMap<&PathBuf, String>,
) {
    let mut moves: Vec<(PathBuf, Module)> = Vec::new();
    for (module, path) in files.iter() {
        let text = &blanked[path];
        let inline = inline_modules(text);
        for declared in declared_children(text, &texts[path]) {
            let Some(attr) = declared.path else {
                continue;
            };
            let around = inline_path(&inline, declared.at);
            // Relative to the file's directory; inside inline modules, to their directories
            // (under `x/` for a file `x.rs`, beside it for `mod.rs`, `lib.rs`, `main.rs`).
            let mut dir: PathBuf = path.parent().map(Path::to_path_buf).unwrap_or_default();
            if !around.is_empty() {
                let stem = path.file_stem().unwrap_or_default();
                if !["mod", "lib", "main"].iter().any(|s| stem == *s) {
                    dir.push(stem);
                }
                dir.extend(&around);
            }
            let target = normalize(&dir.join(attr));
            let mut child = module.clone();
            child.extend(around);
            child.push(declared.name);
            moves.push((target, child));
        }
    }
    for (target, child) in moves {
        let old = (files.iter())
            .find(|(_, p)| **p == target)
            .map(|(m, _)| m.clone());
        if let Some(old) = old {
            let path = files.remove(&old).unwrap();
            files.insert(child, path);
        }
    }
}

/// `a/./b/../c.rs` as `a/c.rs`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The child modules `text` declares, by name, each at the path of the inline modules around
/// its declaration.
fn child_aliases(module: &Module, text: &str, inline: &[Inline]) -> BTreeMap<String, Module> {
    let mut aliases = BTreeMap::new();
    for declared in declared_children(text, text) {
        let mut child = module.clone();
        child.extend(inline_path(inline, declared.at));
        child.push(declared.name.clone());
        aliases.insert(declared.name, child);
    }
    aliases
}

/// What `module`'s (blanked) text names of other files: (file, item named there).
fn references(module: &Module, text: &str, tables: &Tables) -> Vec<(PathBuf, String)> {
    let files = tables.files;
    let inline = inline_modules(text);
    let mut aliases = child_aliases(module, text, &inline);
    let scope_at = |at: usize| {
        let mut scope = module.clone();
        scope.extend(inline_path(&inline, at));
        scope
    };
    let mut paths: Vec<(String, usize)> = Vec::new();
    for (at, tree) in use_trees(text) {
        for path in expand(&tree) {
            paths.push((path, at));
        }
    }
    // A `use` that names a module makes its name (or its `as` name) a prefix of later paths.
    for (path, at) in &paths {
        let name = path.rsplit(" as ").next().unwrap_or(path);
        let name = name.rsplit("::").next().unwrap_or(name).trim().to_string();
        let resolved = resolve(&scope_at(*at), path, &aliases).map(|r| tables.canonical(r));
        if let Some(r) = resolved.filter(|r| files.contains_key(r)) {
            aliases.insert(name, r);
        }
    }
    paths.extend(path_expressions(text));
    let mut out = Vec::new();
    for (path, at) in paths {
        let Some(named) = resolve(&scope_at(at), &path, &aliases) else {
            continue;
        };
        let named = tables.canonical(named);
        // The file of the longest module prefix the path names.
        let target = named[..tables.file_prefix(&named)].to_vec();
        let Some(file) = files.get(&target) else {
            continue;
        };
        // The file itself, or an ancestor: part of the file, not a layer above it.
        if module.starts_with(&target) {
            continue;
        }
        let item = named.get(target.len()).cloned();
        out.push((file.clone(), item.unwrap_or_else(|| "(module)".into())));
    }
    out
}

/// `path`, written in the module `scope` (the file's module, then the inline modules around
/// the path), as the module path it names, or `None` for a path that starts at an external
/// crate or a type.
fn resolve(scope: &Module, path: &str, aliases: &BTreeMap<String, Module>) -> Option<Module> {
    let segments: Vec<&str> = (path.split("::"))
        .map(|s| s.split(" as ").next().unwrap_or(s).trim())
        .filter(|s| !s.is_empty())
        .collect();
    let (first, rest) = segments.split_first()?;
    let mut out = match *first {
        "crate" => Vec::new(),
        "self" | "super" => {
            let mut base = scope.clone();
            let leading = (segments.iter()).take_while(|s| matches!(**s, "self" | "super"));
            let mut skip = 0;
            for s in leading {
                if *s == "super" {
                    base.pop();
                }
                skip += 1;
            }
            base.extend(segments[skip..].iter().map(|s| s.to_string()));
            return Some(base);
        }
        name => aliases.get(name)?.clone(),
    };
    out.extend(rest.iter().map(|s| s.to_string()));
    Some(out)
}

/// Tarjan's strongly connected components of more than one file.
fn strongly_connected(
    edges: &BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>,
) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flat_map(|m| m.keys()) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut ring = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                ring.push(w.clone());
                if w == v {
                    break;
                }
            }
            if ring.len() > 1 {
                ring.sort();
                s.out.push(ring);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

//! The architecture rule on a crate's source: modules form layers, no two files import each
//! other, directly or through a ring (ARCHITECTURE.md, Invariants). A file's uses of its
//! ancestors (`super::Session`, `crate::protocol::Worker` from under `protocol/`) are part of
//! it and not counted; every other path a file names (`use` lines, `crate::a::b`, `super::x::y`,
//! a child module's or an imported module's items) is an edge to the file that defines the
//! module it names. The source is read as text ([`source`]): comments, strings and char
//! literals are blanked first, so a path in a doc comment is no edge. A `main.rs` beside a
//! `lib.rs` is a crate of its own that reaches the library by its name, so it is kept as a file
//! apart rather than as the root.

mod source;

use source::{blank, declared_children, expand, inline_modules, path_expressions, use_trees};
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
    let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (module, path) in &files {
        let full = src.join(path);
        let text =
            std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
        let out = edges.entry(path.clone()).or_default();
        for (target, item) in references(module, &blank(&text), &files) {
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

/// Every `.rs` file under `dir`, by the module it defines (`a/mod.rs` and `a.rs` are `a`).
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

/// What `module`'s (blanked) text names of other files: (file, item named there).
fn references(
    module: &Module,
    text: &str,
    files: &BTreeMap<Module, PathBuf>,
) -> Vec<(PathBuf, String)> {
    let inline = inline_modules(text);
    let mut aliases: BTreeMap<String, Module> = BTreeMap::new();
    for name in declared_children(text) {
        let mut child = module.clone();
        child.push(name.clone());
        aliases.insert(name, child);
    }
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
        let resolved = resolve(module, path, *at, &inline, &aliases);
        if let Some(r) = resolved.filter(|r| files.contains_key(r)) {
            aliases.insert(name, r);
        }
    }
    paths.extend(path_expressions(text));
    let mut out = Vec::new();
    for (path, at) in paths {
        let Some(named) = resolve(module, &path, at, &inline, &aliases) else {
            continue;
        };
        // The file of the longest module prefix the path names.
        let mut target = named.clone();
        while !files.contains_key(&target) && !target.is_empty() {
            target.pop();
        }
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

/// `path` (written at byte `at`) as the module path it names, or `None` for a path that
/// starts at an external crate or a type.
fn resolve(
    module: &Module,
    path: &str,
    at: usize,
    inline: &[(usize, usize)],
    aliases: &BTreeMap<String, Module>,
) -> Option<Module> {
    let segments: Vec<&str> = (path.split("::"))
        .map(|s| s.split(" as ").next().unwrap_or(s).trim())
        .filter(|s| !s.is_empty())
        .collect();
    let (first, rest) = segments.split_first()?;
    let mut out = match *first {
        "crate" => Vec::new(),
        "self" | "super" => {
            // In an inline `mod x { .. }`, `super` is the file's own module.
            let mut base = module.clone();
            let mut depth = usize::from(inline.iter().any(|&(a, b)| a <= at && at < b));
            for s in segments
                .iter()
                .take_while(|s| matches!(**s, "self" | "super"))
            {
                if *s == "super" {
                    match depth {
                        0 => {
                            base.pop();
                        }
                        _ => depth -= 1,
                    }
                }
            }
            let skip = segments
                .iter()
                .take_while(|s| matches!(**s, "self" | "super"));
            let skip = skip.count();
            return Some(
                base.into_iter()
                    .chain(segments[skip..].iter().map(|s| s.to_string()))
                    .collect(),
            );
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

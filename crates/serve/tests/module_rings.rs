//! The architecture rule on serve's own source: modules form layers, no two files import each
//! other, directly or through a ring (ARCHITECTURE.md, Invariants). A file's uses of its
//! ancestors (`super::Session`, `crate::protocol::Worker` from under `protocol/`) are part of
//! it and not counted; every other path a file names (`use` lines, `crate::a::b`, `super::x::y`,
//! a child module's or an imported module's items) is an edge to the file that defines the
//! module it names. The source is read as text: comments, strings and char literals are blanked
//! first, so a path in a doc comment is no edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

#[test]
fn serve_modules_form_no_ring() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rings = rings(&src);
    let text: Vec<String> = rings.iter().map(|r| r.join("\n  ")).collect();
    assert!(
        rings.is_empty(),
        "files importing each other through a ring:\n  {}",
        text.join("\n\n  ")
    );
}

#[test]
fn a_ring_is_found_through_a_child_an_alias_and_a_use_group() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\n");
    write(
        "a.rs",
        "mod inner;\n// use crate::b::Gone; in a comment is no edge\n",
    );
    write(
        "a/inner.rs",
        "use crate::b;\nfn f() { let _ = b::deep::F; }\n",
    );
    write("b.rs", "pub mod deep;\n");
    write(
        "b/deep.rs",
        "use crate::{a::inner::G, x};\nconst S: &str = \"crate::a::H\";\n",
    );
    let found = rings(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    let ring = found[0].join("\n");
    assert!(ring.contains("a/inner.rs -> b/deep.rs (F)"), "{ring}");
    assert!(ring.contains("b/deep.rs -> a/inner.rs (G)"), "{ring}");
    // Once the inner file names the other side only in a comment, the ring is gone.
    write("a/inner.rs", "// crate::b::deep::F\n");
    assert!(rings(dir.path()).is_empty());
}

/// Every ring among the `.rs` files under `src`: each as its edges inside the ring.
fn rings(src: &Path) -> Vec<Vec<String>> {
    let mut files: BTreeMap<Module, PathBuf> = BTreeMap::new();
    collect(src, src, &mut files);
    let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (module, path) in &files {
        let text = std::fs::read_to_string(src.join(path)).unwrap();
        let out = edges.entry(path.clone()).or_default();
        for (target, item) in references(module, &blank(&text), &files) {
            out.entry(target).or_default().insert(item);
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .map(|ring| {
            let mut lines = Vec::new();
            for from in &ring {
                for (to, items) in &edges[from] {
                    if ring.contains(to) {
                        let items: Vec<&str> = items.iter().map(String::as_str).collect();
                        let (from, to) = (from.display(), to.display());
                        lines.push(format!("{from} -> {to} ({})", items.join(", ")));
                    }
                }
            }
            lines
        })
        .collect()
}

fn collect(root: &Path, dir: &Path, files: &mut BTreeMap<Module, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            let mut module: Module = (rel.with_extension("").iter())
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod")) {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            files.insert(module, rel);
        }
    }
}

/// The source with comments, string and char literals blanked (lifetimes kept).
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if text[j..].starts_with("/*") {
                    depth += 1;
                    j += 2;
                } else if text[j..].starts_with("*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            i = j;
        } else if let Some(len) = raw_string(rest, i == 0 || is_ident(b[i - 1])) {
            out.push_str("\"\"");
            i += len;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if let Some(len) = char_literal(rest) {
            out.push_str("' '");
            i += len;
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The length of a raw string (`r"..."`, `br#"..."#`) at the start of `s`.
fn raw_string(s: &str, after_ident: bool) -> Option<usize> {
    if after_ident {
        return None;
    }
    let body = s.strip_prefix('b').unwrap_or(s).strip_prefix('r')?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    let open = &body[hashes..];
    if !open.starts_with('"') {
        return None;
    }
    let close = format!("\"{}", "#".repeat(hashes));
    let end = open[1..].find(&close)? + 1 + close.len();
    Some(s.len() - open.len() + end)
}

/// The length of a char literal (`'a'`, `'\n'`, `'\u{1F600}'`) at the start of `s`; `None`
/// for a lifetime.
fn char_literal(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('\'')?;
    let mut chars = rest.char_indices();
    let (_, c) = chars.next()?;
    let end = if c == '\\' {
        rest[1..].find('\'')? + 1
    } else {
        c.len_utf8()
    };
    rest[end..].starts_with('\'').then_some(end + 2)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
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

/// The byte ranges of inline `mod name { .. }` blocks.
fn inline_modules(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("mod ") {
        if at > 0 && is_ident(text.as_bytes()[at - 1]) {
            continue;
        }
        let rest = &text[at + 4..];
        let name_len = rest.bytes().take_while(|&b| is_ident(b)).count();
        let after = rest[name_len..].trim_start();
        if name_len == 0 || !after.starts_with('{') {
            continue;
        }
        let open = text.len() - after.len();
        let mut depth = 0;
        for (i, b) in text[open..].bytes().enumerate() {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((at, open + i));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The names of the child modules a file declares (`mod name;`).
fn declared_children(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("mod ") {
        if at > 0 && is_ident(text.as_bytes()[at - 1]) {
            continue;
        }
        let rest = &text[at + 4..];
        let name_len = rest.bytes().take_while(|&b| is_ident(b)).count();
        if name_len > 0 && rest[name_len..].trim_start().starts_with(';') {
            out.push(rest[..name_len].to_string());
        }
    }
    out
}

/// Each `use` item's tree (what follows `use`, to its `;`) and where it is.
fn use_trees(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("use ") {
        if at > 0 && is_ident(text.as_bytes()[at - 1]) {
            continue;
        }
        if let Some(end) = text[at..].find(';') {
            out.push((at, text[at + 4..at + end].to_string()));
        }
    }
    out
}

/// A use tree's paths: `a::{b, c::{d, self}}` is `a::b`, `a::c::d`, `a::c`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return tree.split(',').map(|s| s.trim().to_string()).collect();
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    let mut out = Vec::new();
    for part in parts.into_iter().filter(|p| !p.trim().is_empty()) {
        for path in expand(part) {
            match path.as_str() {
                "self" => out.push(prefix.trim_end_matches("::").to_string()),
                _ => out.push(format!("{prefix}{path}")),
            }
        }
    }
    out
}

/// Every `a::b(::c)*` path in the text, with where it starts.
fn path_expressions(text: &str) -> Vec<(String, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        loop {
            let word = b[end..].iter().take_while(|&&c| is_ident(c)).count();
            end += word;
            if word > 0
                && text[end..].starts_with("::")
                && b.get(end + 2).is_some_and(|&c| is_ident(c))
            {
                end += 2;
            } else {
                break;
            }
        }
        if text[start..end].contains("::") {
            out.push((text[start..end].to_string(), start));
        }
        i = end.max(i + 1);
    }
    out
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

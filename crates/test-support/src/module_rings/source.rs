//! A Rust file read as text, as far as the ring checker needs it: comments and literals
//! blanked, then the `mod` declarations, `use` trees and `a::b` paths found in what is left.

/// The source with comments, string and char literals blanked to spaces (lifetimes kept), byte
/// for byte: an offset in the blanked text is the same offset in the source, so an attribute's
/// string (`#[path = "x.rs"]`) can be read back from the source.
pub(super) fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        // Comments and literals are compared and skipped by bytes: a non-ASCII character
        // inside them is never cut, only overwritten whole.
        let skip = if b[i..].starts_with(b"//") {
            Some(rest.find('\n').unwrap_or(rest.len()))
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            Some(j.min(b.len()) - i)
        } else {
            None
        };
        if let Some(len) = skip {
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
            continue;
        }
        let literal = if let Some(len) = raw_string(rest, i > 0 && is_ident(b[i - 1])) {
            Some((len, '"'))
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            Some(((j + 1).min(b.len()) - i, '"'))
        } else {
            char_literal(rest).map(|len| (len, '\''))
        };
        if let Some((len, quote)) = literal {
            out.push(quote);
            out.extend(std::iter::repeat_n(' ', len.saturating_sub(2)));
            if len > 1 {
                out.push(quote);
            }
            i += len;
            continue;
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
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

/// An inline `mod name { .. }` block: its name and the byte range from `mod` to its `}`.
pub(super) struct Inline {
    pub name: String,
    pub start: usize,
    pub end: usize,
}

/// Every inline `mod name { .. }` block, in the order they open (an outer one before those
/// inside it).
pub(super) fn inline_modules(text: &str) -> Vec<Inline> {
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
                        let name = rest[..name_len].to_string();
                        out.push(Inline {
                            name,
                            start: at,
                            end: open + i,
                        });
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The names of the inline modules around byte `at`, outermost first.
pub(super) fn inline_path(inline: &[Inline], at: usize) -> Vec<String> {
    (inline.iter())
        .filter(|m| m.start < at && at < m.end)
        .map(|m| m.name.clone())
        .collect()
}

/// A child module a file declares (`mod name;`): its name, where it is declared, and the file
/// its `#[path = "..."]` attribute names, if it has one.
pub(super) struct Declared {
    pub name: String,
    pub at: usize,
    pub path: Option<String>,
}

/// The child modules a file declares (`mod name;`); `text` is the blanked `source`, from which
/// a `#[path]` attribute's string is read back.
pub(super) fn declared_children(text: &str, source: &str) -> Vec<Declared> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("mod ") {
        if at > 0 && is_ident(text.as_bytes()[at - 1]) {
            continue;
        }
        let rest = &text[at + 4..];
        let name_len = rest.bytes().take_while(|&b| is_ident(b)).count();
        if name_len > 0 && rest[name_len..].trim_start().starts_with(';') {
            out.push(Declared {
                name: rest[..name_len].to_string(),
                at,
                path: path_attribute(text, source, at),
            });
        }
    }
    out
}

/// The string of a `#[path = "..."]` among the attributes just before byte `at` (a `mod`,
/// perhaps after `pub` or `pub(crate)`).
fn path_attribute(text: &str, source: &str, at: usize) -> Option<String> {
    let mut before = text[..at].trim_end();
    for vis in ["pub(crate)", "pub(super)", "pub"] {
        if let Some(rest) = before.strip_suffix(vis) {
            before = rest.trim_end();
            break;
        }
    }
    // Walk back over the attributes (`#[...]`) that stand right before the declaration.
    while before.ends_with(']') {
        let open = before.rfind("#[")?;
        let attr = &before[open + 2..before.len() - 1];
        let value = (attr.trim_start().strip_prefix("path"))
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .map(str::trim_start);
        if let Some(value) = value {
            // The blanked string keeps its quotes and offsets: its text is in the source.
            let quote = open + 2 + attr.len() - value.len();
            let body = source.get(quote + 1..)?;
            return body.find('"').map(|end| body[..end].to_string());
        }
        before = before[..open].trim_end();
    }
    None
}

/// Each `use` item's tree (what follows `use`, to its `;`) and where it is.
pub(super) fn use_trees(text: &str) -> Vec<(usize, String)> {
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
pub(super) fn expand(tree: &str) -> Vec<String> {
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
pub(super) fn path_expressions(text: &str) -> Vec<(String, usize)> {
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

/// The names a file defines itself (`fn`, `struct`, `enum`, `const`, `static`, `type`,
/// `trait`, `union`, `mod`, `macro_rules!`): a glob import is not where such a name comes from.
pub(super) fn defined_items(text: &str) -> std::collections::BTreeSet<String> {
    let b = text.as_bytes();
    let mut out = std::collections::BTreeSet::new();
    for keyword in [
        "fn",
        "struct",
        "enum",
        "const",
        "static",
        "type",
        "trait",
        "union",
        "mod",
        "macro_rules!",
    ] {
        for (at, _) in text.match_indices(keyword) {
            let end = at + keyword.len();
            if (at > 0 && is_ident(b[at - 1])) || b.get(end).is_some_and(|&c| is_ident(c)) {
                continue;
            }
            let rest = text[end..].trim_start();
            let rest = rest.strip_prefix("mut ").unwrap_or(rest).trim_start();
            let len = rest.bytes().take_while(|&c| is_ident(c)).count();
            if len > 0 {
                out.insert(rest[..len].to_string());
            }
        }
    }
    out
}

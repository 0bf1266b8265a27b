//! What a stylesheet makes a browser request: its `@import`s and its `url()`s, in order.
//!
//! Tokenized by cssparser (Servo's implementation of CSS Syntax Level 3): `url(x)`,
//! `url("x")`, escapes, comments and strings come out as a browser's tokenizer gives them, so
//! a `url(` inside a comment or a string is not a reference. An `@import` counts only before
//! the first rule, as in a browser. Every `url()` is listed, including those of rules no element
//! matches and of fonts no text uses: a browser fetches those only when they apply, which
//! without a layout engine cannot be known (docs/discover.md says so).

use cssparser::{ParseError, Parser, Token};

/// One reference in a stylesheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// As written: resolved against the stylesheet's URL by the caller.
    pub url: String,
    /// An `@import`: a stylesheet itself, followed in turn.
    pub import: bool,
}

/// Blocks nested deeper than this are not searched (a hostile stylesheet cannot overflow the
/// stack; real ones nest a few levels).
const MAX_DEPTH: u32 = 64;

/// The stylesheet's references, in order.
pub fn references(css: &str) -> Vec<Reference> {
    let mut parser = Parser::new(css);
    let mut out = Vec::new();
    walk(&mut parser, 0, &mut out);
    out
}

fn walk(p: &mut Parser<'_>, depth: u32, out: &mut Vec<Reference>) {
    // At the top level: whether an @import may still appear, and whether one is being read.
    let mut imports_allowed = depth == 0;
    let mut in_import = false;
    loop {
        let token = match p.next_including_whitespace_and_comments() {
            Ok(t) => t.clone(),
            Err(_) => return,
        };
        match token {
            Token::WhiteSpace(_) | Token::Comment(_) => {}
            Token::AtKeyword(name) => {
                let name = name.to_ascii_lowercase();
                in_import = imports_allowed && name == "import";
                // @charset and @layer statements may precede @import; anything else ends them.
                if !matches!(name.as_str(), "import" | "charset" | "layer") {
                    imports_allowed = false;
                }
            }
            Token::UnquotedUrl(url) => {
                out.push(Reference {
                    url: url.to_string(),
                    import: in_import,
                });
                in_import = false;
            }
            Token::QuotedString(url) if in_import => {
                out.push(Reference {
                    url: url.to_string(),
                    import: true,
                });
                in_import = false;
            }
            Token::Function(name)
                if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") =>
            {
                // url("x") with a quoted string: the string is the URL.
                let import = in_import;
                let _ = p.parse_nested_block(|p| {
                    if let Ok(Token::QuotedString(url)) = p.next() {
                        out.push(Reference {
                            url: url.to_string(),
                            import,
                        });
                    }
                    Ok::<(), ParseError<()>>(())
                });
                in_import = false;
            }
            Token::Function(_)
            | Token::ParenthesisBlock
            | Token::SquareBracketBlock
            | Token::CurlyBracketBlock => {
                if matches!(token, Token::CurlyBracketBlock) {
                    imports_allowed = false;
                    in_import = false;
                }
                if depth < MAX_DEPTH {
                    let _ = p.parse_nested_block(|p| {
                        walk(p, depth + 1, out);
                        Ok::<(), ParseError<()>>(())
                    });
                }
            }
            Token::Semicolon => in_import = false,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(css: &str) -> Vec<(String, bool)> {
        references(css)
            .into_iter()
            .map(|r| (r.url, r.import))
            .collect()
    }

    #[test]
    fn imports_and_urls_in_order() {
        let css = r#"@charset "utf-8";
            @import "a.css";
            @import url(b.css) screen;
            @import url("c.css");
            /* url(comment.png) */
            body { background: url( bg.png ) no-repeat; content: "url(string.png)" }
            @media (min-width: 1px) { .x { background-image: url('nested.png') } }
            @font-face { font-family: f; src: url(f.woff2) format("woff2") }
            @import "late.css";
            .e { background: url(sp\61 ce.png) }"#;
        assert_eq!(
            refs(css),
            [
                ("a.css".into(), true),
                ("b.css".into(), true),
                ("c.css".into(), true),
                ("bg.png".into(), false),
                ("nested.png".into(), false),
                ("f.woff2".into(), false),
                ("space.png".into(), false),
            ]
        );
    }

    #[test]
    fn hostile_nesting_and_junk_end_quietly() {
        let deep = "(".repeat(100_000) + "url(x.png)";
        assert!(references(&deep).is_empty());
        assert_eq!(
            refs("a { b: url(ok.png) } }}} { url(also.png)"),
            [("ok.png".into(), false), ("also.png".into(), false)]
        );
    }
}

//! A document's character encoding, found as the HTML standard has a browser find it, and its
//! bytes decoded (WHATWG Encoding Standard, `encoding_rs`): for a page, its byte order mark,
//! else its `Content-Type`'s `charset`, else the first `<meta charset>` (or `http-equiv`) the
//! parser meets, which the tree builder reports (`html5ever`'s encoding indicator: the page is
//! then parsed again in that encoding, as a browser's "change the encoding" does); with none of
//! them, what Chromium reads an undeclared page as: windows-1252 for a page of ASCII alone and
//! for one whose bytes are UTF-8 (its detector never answers UTF-8 for a web page), else the
//! legacy encoding its bytes look like (windows-1251, Shift_JIS...), guessed by `chardetng`
//! (Firefox's detector) as Chromium guesses with its own. For a stylesheet: its byte order mark, its
//! `Content-Type`'s `charset`, its `@charset`, else the encoding of the page that links it
//! (CSS Syntax Level 3, "determine the fallback encoding").
//!
//! What follows for URLs: a reference's path is percent-encoded from UTF-8 whatever the page's
//! encoding (the URL standard), its query in the page's ([`Charset::join`]).

use chardetng::EncodingDetector;
use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use std::borrow::Cow;
use url::Url;

/// A document's encoding, and what said it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Charset {
    /// The encoding the document was decoded from.
    pub encoding: &'static Encoding,
    /// What named it: "its byte order mark", "its Content-Type", "its <meta charset>",
    /// "its @charset", "the page's", or one of [`UNDECLARED`], [`UNDECLARED_UTF_8`],
    /// [`GUESSED`].
    pub from: &'static str,
}

/// A page that declares nothing and is ASCII alone: windows-1252 reads it as UTF-8 would.
pub const UNDECLARED: &str = "no declaration";
/// A page that declares nothing and whose bytes are UTF-8: read as windows-1252 all the same.
pub const UNDECLARED_UTF_8: &str = "no declaration, its bytes UTF-8";
/// A page that declares nothing and whose bytes are not UTF-8: the encoding they look like.
pub const GUESSED: &str = "no declaration, guessed from its bytes";

impl Default for Charset {
    fn default() -> Charset {
        Charset {
            encoding: UTF_8,
            from: "no declaration",
        }
    }
}

impl Charset {
    /// Resolves `reference` against `base` as a browser resolves an attribute of this
    /// document: the query percent-encoded in the document's encoding (characters it cannot
    /// encode as `&#N;`, as `encoding_rs` does for a form), the rest from UTF-8.
    pub fn join(&self, base: &Url, reference: &str) -> Option<Url> {
        if self.encoding == UTF_8 {
            return base.join(reference).ok();
        }
        let encoding = self.encoding;
        let encode: &dyn Fn(&str) -> Cow<'_, [u8]> = &|s| encoding.encode(s).0;
        Url::options()
            .base_url(Some(base))
            .encoding_override(Some(encode))
            .parse(reference)
            .ok()
    }

    /// A note for the page when its encoding changes what a workload's paths hold; `None`
    /// for UTF-8 and for an undeclared page of ASCII alone. `non_ascii`: how many of its
    /// references hold characters other than ASCII (each resolved from this reading).
    pub fn note(&self, non_ascii: u64) -> Option<String> {
        if self.encoding == UTF_8 || self.from == UNDECLARED {
            return None;
        }
        let name = self.encoding.name();
        if self.from == UNDECLARED_UTF_8 {
            return Some(format!(
                "declares no encoding and looks like UTF-8: read as {name}, as Chromium reads \
                 it; {non_ascii} of its references hold non-ASCII characters and so name other \
                 URLs than in UTF-8 (declared charset=utf-8, they would be as written)"
            ));
        }
        Some(format!(
            "decoded as {name} ({}): its references' paths percent-encoded from UTF-8, their \
             queries from {name}, as a browser does",
            self.from
        ))
    }
}

/// The encoding a label names, as the HTML standard takes a `<meta>`'s: UTF-16 is read as
/// UTF-8 (a page that says UTF-16 in itself is not), x-user-defined as windows-1252.
pub fn meta_encoding(label: &str) -> Option<&'static Encoding> {
    let e = Encoding::for_label(label.trim().as_bytes())?;
    Some(
        if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE {
            UTF_8
        } else if e == encoding_rs::X_USER_DEFINED {
            WINDOWS_1252
        } else {
            e
        },
    )
}

/// The encoding of a page before its `<meta>` is read: `certain` when a byte order mark or the
/// `Content-Type` named it (a `<meta>` then changes nothing).
pub fn html_start(body: &[u8], content_type_charset: Option<&str>) -> (Charset, bool) {
    if let Some((encoding, _)) = Encoding::for_bom(body) {
        let from = "its byte order mark";
        return (Charset { encoding, from }, true);
    }
    if let Some(encoding) = content_type_charset.and_then(|l| Encoding::for_label(l.as_bytes())) {
        let from = "its Content-Type";
        return (Charset { encoding, from }, true);
    }
    // What Chromium reads an undeclared page as: its detector never answers UTF-8 for a web
    // page, and has nothing to go on in ASCII (whose queries' character references are then
    // encoded in windows-1252 too).
    let (encoding, from) = if body.is_ascii() {
        (WINDOWS_1252, UNDECLARED)
    } else if std::str::from_utf8(body).is_ok() {
        (WINDOWS_1252, UNDECLARED_UTF_8)
    } else {
        let mut detector = EncodingDetector::new();
        detector.feed(body, true);
        (detector.guess(None, false), GUESSED)
    };
    (Charset { encoding, from }, false)
}

/// `body` decoded (a byte order mark dropped; bytes the encoding cannot map as U+FFFD).
pub fn decode<'a>(body: &'a [u8], charset: &Charset) -> Cow<'a, str> {
    charset.encoding.decode_with_bom_removal(body).0
}

/// A stylesheet's encoding: its byte order mark, its `Content-Type`'s `charset`, its
/// `@charset "..."` (the exact bytes CSS Syntax asks for, at its very start), else
/// `fallback` (the page's).
pub fn css(body: &[u8], content_type_charset: Option<&str>, fallback: Charset) -> Charset {
    if let Some((encoding, _)) = Encoding::for_bom(body) {
        let from = "its byte order mark";
        return Charset { encoding, from };
    }
    if let Some(encoding) = content_type_charset.and_then(|l| Encoding::for_label(l.as_bytes())) {
        let from = "its Content-Type";
        return Charset { encoding, from };
    }
    const AT_CHARSET: &[u8] = b"@charset \"";
    if let Some(rest) = body.strip_prefix(AT_CHARSET) {
        let label = rest
            .iter()
            .take(1024)
            .position(|&b| b == b'"')
            .and_then(|end| (rest.get(end + 1) == Some(&b';')).then(|| &rest[..end]));
        if let Some(e) = label.and_then(Encoding::for_label) {
            // UTF-16 named in the sheet itself is read as UTF-8, as for a page.
            let encoding = if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE {
                UTF_8
            } else {
                e
            };
            let from = "its @charset";
            return Charset { encoding, from };
        }
    }
    Charset {
        from: "the page's",
        ..fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_s_encoding_comes_from_its_bom_then_its_content_type() {
        let (c, certain) = html_start(b"\xFF\xFE<\0p\0", Some("windows-1252"));
        assert_eq!((c.encoding, certain), (encoding_rs::UTF_16LE, true));
        assert_eq!(decode(b"\xFF\xFE<\0p\0", &c), "<p");
        let (c, certain) = html_start(b"caf\xe9", Some("latin1"));
        assert_eq!((c.encoding, certain), (WINDOWS_1252, true));
        assert_eq!(decode(b"caf\xe9", &c), "café");
        // Undeclared UTF-8 is read as Chromium reads it.
        let (c, certain) = html_start("café".as_bytes(), None);
        assert_eq!((c.encoding, c.from), (WINDOWS_1252, UNDECLARED_UTF_8));
        assert!(!certain);
        let ascii = html_start(b"cafe", None).0;
        assert_eq!((ascii.encoding, ascii.note(0)), (WINDOWS_1252, None));
        let (c, certain) = html_start(b"caf\xe9", Some("no-such-thing"));
        assert_eq!((c.encoding, certain), (WINDOWS_1252, false));
    }

    #[test]
    fn a_meta_naming_utf_16_means_utf_8() {
        assert_eq!(meta_encoding(" UTF-16 "), Some(UTF_8));
        assert_eq!(meta_encoding("x-user-defined"), Some(WINDOWS_1252));
        assert_eq!(meta_encoding("shift_jis"), Some(encoding_rs::SHIFT_JIS));
        assert_eq!(meta_encoding("nonsense"), None);
    }

    #[test]
    fn a_stylesheet_s_encoding() {
        let page = Charset {
            encoding: encoding_rs::SHIFT_JIS,
            from: "its <meta charset>",
        };
        assert_eq!(css(b"a{}", None, page).encoding, encoding_rs::SHIFT_JIS);
        let at = b"@charset \"windows-1252\"; a{}";
        assert_eq!(css(at, None, page).encoding, WINDOWS_1252);
        assert_eq!(css(at, Some("utf-8"), page).encoding, UTF_8);
        // Not the exact bytes: no @charset.
        let loose = b"@charset 'windows-1252'; a{}";
        assert_eq!(css(loose, None, page).encoding, encoding_rs::SHIFT_JIS);
        let bom = b"\xEF\xBB\xBF@charset \"windows-1252\"; a{}";
        assert_eq!(css(bom, None, page).encoding, UTF_8);
    }

    #[test]
    fn a_query_is_encoded_in_the_page_s_encoding_its_path_in_utf_8() {
        let base = Url::parse("http://h/d/").unwrap();
        let latin = Charset {
            encoding: WINDOWS_1252,
            from: "its <meta charset>",
        };
        let u = latin.join(&base, "café.png?q=é").unwrap();
        assert_eq!(&u[url::Position::BeforePath..], "/d/caf%C3%A9.png?q=%E9");
        let u = Charset::default().join(&base, "café.png?q=é").unwrap();
        assert_eq!(&u[url::Position::BeforePath..], "/d/caf%C3%A9.png?q=%C3%A9");
    }
}

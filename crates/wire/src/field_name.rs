//! The field names flint acts on, recognised in one place for every protocol and both sides:
//! HTTP/1.1's request parser (names in any case), HTTP/2's request checks and serve's HTTP/2
//! request builder (lowercase names, as HTTP/2 and HTTP/3 carry them), and the load generator's
//! HTTP/2 response reader. A name is compared on every field of every request, so the table is
//! dispatched on the length first and compared a word at a time.

/// The enum and its spellings from one table: each name once, so a name added is spelled and
/// tested alike. `find`'s table by length is written by hand: a name added here must be added
/// there too (the test over `ALL` fails until it is).
macro_rules! field_names {
    ($($(#[$doc:meta])* $name:ident => $lower:literal,)*) => {
        /// A field name flint acts on (the pseudo-header fields of HTTP/2 and HTTP/3 among them);
        /// `Other` for any other name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum FieldName {
            $($(#[$doc])* $name,)*
            /// Any name not above.
            Other,
        }

        impl FieldName {
            /// The name, lowercase; empty for `Other`.
            pub const fn lower(self) -> &'static [u8] {
                match self {
                    $(FieldName::$name => $lower,)*
                    FieldName::Other => b"",
                }
            }
        }

        /// Every name but `Other`.
        #[cfg(test)]
        const ALL: &[FieldName] = &[$(FieldName::$name),*];
    };
}

field_names! {
    /// `:method`.
    Method => b":method",
    /// `:path`.
    Path => b":path",
    /// `:scheme`.
    Scheme => b":scheme",
    /// `:authority`.
    Authority => b":authority",
    /// `:status`.
    Status => b":status",
    /// `host`: the target's authority in HTTP/1.1.
    Host => b"host",
    /// `content-length`: the body's length in bytes.
    ContentLength => b"content-length",
    /// `transfer-encoding`: the codings that frame an HTTP/1.1 body.
    TransferEncoding => b"transfer-encoding",
    /// `connection`: the connection's options (`close`, `keep-alive`); HTTP/2 forbids it.
    Connection => b"connection",
    /// `keep-alive`: HTTP/1.0's persistence parameters; HTTP/2 forbids it.
    KeepAlive => b"keep-alive",
    /// `proxy-connection`: a pre-standard `connection`; HTTP/2 forbids it.
    ProxyConnection => b"proxy-connection",
    /// `upgrade`: a switch to another protocol; HTTP/2 forbids it.
    Upgrade => b"upgrade",
    /// `te`: the transfer codings a client accepts; HTTP/2 allows only `trailers`.
    Te => b"te",
    /// `priority`: RFC 9218's urgency and incremental parameters.
    Priority => b"priority",
    /// `expect`: `100-continue` asks for an interim response before the body.
    Expect => b"expect",
    /// `if-match`: a list of entity tags, one of which must match.
    IfMatch => b"if-match",
    /// `if-none-match`: a list of entity tags, none of which may match.
    IfNoneMatch => b"if-none-match",
    /// `if-modified-since`: an HTTP-date the representation must be newer than.
    IfModifiedSince => b"if-modified-since",
    /// `if-unmodified-since`: an HTTP-date the representation must not be newer than.
    IfUnmodifiedSince => b"if-unmodified-since",
    /// `range`: the byte ranges asked for.
    Range => b"range",
    /// `if-range`: an entity tag or date the `range` holds for.
    IfRange => b"if-range",
    /// `accept-encoding`: the content codings a client accepts.
    AcceptEncoding => b"accept-encoding",
    /// `user-agent`: the client's name, for the access log.
    UserAgent => b"user-agent",
    /// `referer`: the page the request came from, for the access log.
    Referer => b"referer",
    /// `authorization`: the credentials (serve reads Basic).
    Authorization => b"authorization",
    /// `cookie`: the cookies sent, one or more fields.
    Cookie => b"cookie",
    /// `location`: a redirect's target, in a response.
    Location => b"location",
}

impl FieldName {
    /// `name` in any case, as HTTP/1.1 carries names.
    #[inline]
    pub fn of(name: &[u8]) -> FieldName {
        find(name, is_name)
    }

    /// `name` as HTTP/2 and HTTP/3 carry names, lowercase: one with an uppercase letter is
    /// `Other` (the HTTP/2 checks refuse it).
    #[inline]
    pub fn of_lower(name: &[u8]) -> FieldName {
        find(name, |name, lower| name == lower)
    }

    /// A connection-specific field, which HTTP/2 and HTTP/3 messages may not carry (RFC 9113
    /// 8.2.2, RFC 9114 4.2): `connection`, `keep-alive`, `proxy-connection`,
    /// `transfer-encoding` and `upgrade`.
    #[inline]
    pub fn is_connection_specific(self) -> bool {
        use FieldName::*;
        matches!(
            self,
            Connection | KeepAlive | ProxyConnection | TransferEncoding | Upgrade
        )
    }
}

/// The name among those of `name`'s length that `same` says it is.
#[inline(always)]
fn find(name: &[u8], same: impl Fn(&[u8], &[u8]) -> bool) -> FieldName {
    use FieldName::*;
    let candidates: &[FieldName] = match name.len() {
        2 => &[Te],
        4 => &[Host],
        5 => &[Range, Path],
        6 => &[Expect, Cookie],
        7 => &[Referer, Upgrade, Method, Scheme, Status],
        8 => &[IfMatch, IfRange, Location, Priority],
        10 => &[UserAgent, Connection, KeepAlive, Authority],
        13 => &[IfNoneMatch, Authorization],
        14 => &[ContentLength],
        15 => &[AcceptEncoding],
        16 => &[ProxyConnection],
        17 => &[IfModifiedSince, TransferEncoding],
        19 => &[IfUnmodifiedSince],
        _ => &[],
    };
    for &candidate in candidates {
        if same(name, candidate.lower()) {
            return candidate;
        }
    }
    Other
}

/// Whether `name` (any case) is `lowercase`, a name of lowercase letters, `-` and `:` of the
/// same length. Word by word rather than byte by byte: a letter of `lowercase` has bit 0x40
/// set and `-` and `:` have not, so `(lowercase & 0x40) >> 1` is the case bit to fold in at
/// letters only, and a byte matches exactly when `byte | that bit` equals the letter (`-` only
/// matches `-`). Names of 4 to 7 bytes are read as two overlapping 4-byte words, longer ones as
/// 8-byte words, the last one overlapping.
fn is_name(name: &[u8], lowercase: &[u8]) -> bool {
    fn word8(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
    }
    fn word4(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
    }
    let len = lowercase.len();
    if name.len() != len {
        return false;
    }
    if len < 4 {
        return name.eq_ignore_ascii_case(lowercase);
    }
    if len < 8 {
        let same = |at: usize| {
            let l = word4(lowercase, at);
            word4(name, at) | ((l & 0x4040_4040) >> 1) == l
        };
        return same(0) && same(len - 4);
    }
    let same = |at: usize| {
        let l = word8(lowercase, at);
        word8(name, at) | ((l & 0x4040_4040_4040_4040) >> 1) == l
    };
    let mut at = 0;
    while at + 8 < len {
        if !same(at) {
            return false;
        }
        at += 8;
    }
    same(len - 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name is found by its own spelling; in any case by `of`, lowercase only by
    /// `of_lower`; a longer or shorter one is `Other`.
    #[test]
    fn each_name_is_found_by_its_spelling_and_nothing_else() {
        for &name in ALL {
            let lower = name.lower();
            assert_eq!(FieldName::of(lower), name);
            assert_eq!(FieldName::of_lower(lower), name);
            let upper = lower.to_ascii_uppercase();
            assert_eq!(FieldName::of(&upper), name);
            let expected = if upper == lower {
                name
            } else {
                FieldName::Other
            };
            assert_eq!(FieldName::of_lower(&upper), expected);
            assert_eq!(FieldName::of(&[lower, b"x"].concat()), FieldName::Other);
            assert_eq!(FieldName::of(&lower[1..]), FieldName::Other);
        }
        assert_eq!(FieldName::of(b""), FieldName::Other);
        assert_eq!(FieldName::of(b"accept"), FieldName::Other);
    }

    /// The five connection-specific names are, and no other.
    #[test]
    fn five_names_are_connection_specific() {
        let mut specific: Vec<_> = (ALL.iter().copied())
            .filter(|n| n.is_connection_specific())
            .map(FieldName::lower)
            .collect();
        let expected: [&[u8]; 5] = [
            b"connection",
            b"keep-alive",
            b"proxy-connection",
            b"transfer-encoding",
            b"upgrade",
        ];
        specific.sort();
        assert_eq!(specific, expected);
        assert!(!FieldName::Other.is_connection_specific());
    }

    /// Every name known, each byte replaced by every byte value in turn: the comparison word
    /// by word is the comparison byte by byte, case aside.
    #[test]
    fn names_compare_word_by_word_as_byte_by_byte() {
        for &known in ALL {
            let lowercase = known.lower();
            assert!(is_name(&lowercase.to_ascii_uppercase(), lowercase));
            let mut name = lowercase.to_vec();
            for i in 0..name.len() {
                for b in 0..=255u8 {
                    name[i] = b;
                    assert_eq!(
                        is_name(&name, lowercase),
                        name.eq_ignore_ascii_case(lowercase),
                        "{name:?}"
                    );
                }
                name[i] = lowercase[i];
            }
            assert!(!is_name(&name[1..], lowercase));
        }
    }
}

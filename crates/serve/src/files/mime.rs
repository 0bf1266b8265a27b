//! Content-Type by file extension.
//!
//! A fixed table, looked up once per file version when the header block is built (never per
//! request). Text types carry `charset=utf-8`, as Go's and Caddy's file servers do, so that a
//! browser does not guess; anything unknown is `application/octet-stream`, which makes a browser
//! download rather than render it.

/// The default for unknown or missing extensions.
pub const DEFAULT: &str = "application/octet-stream";

const TABLE: &[(&str, &str)] = &[
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("json", "application/json"),
    ("txt", "text/plain; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("xml", "application/xml"),
    ("svg", "image/svg+xml"),
    ("gif", "image/gif"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("png", "image/png"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/x-icon"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("br", "application/x-brotli"),
    ("tar", "application/x-tar"),
    ("wasm", "application/wasm"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("mpg", "video/mpeg"),
    ("mpeg", "video/mpeg"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mov", "video/quicktime"),
    ("aif", "audio/aiff"),
    ("aiff", "audio/aiff"),
    ("wav", "audio/wav"),
    ("mp3", "audio/mpeg"),
    ("ogg", "audio/ogg"),
    ("bin", "application/octet-stream"),
];

/// The Content-Type for a path (only its last segment's extension counts, case-insensitively).
pub fn content_type(path: &[u8]) -> &'static str {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let Some(dot) = name.iter().rposition(|&b| b == b'.') else {
        return DEFAULT;
    };
    // ".profile" is a hidden file without an extension, not a file of type "profile".
    if dot == 0 {
        return DEFAULT;
    }
    let ext = &name[dot + 1..];
    TABLE
        .iter()
        .find(|(e, _)| e.as_bytes().eq_ignore_ascii_case(ext))
        .map_or(DEFAULT, |&(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_map_case_insensitively() {
        assert_eq!(content_type(b"/a/index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type(b"/a/PHOTO.JPG"), "image/jpeg");
        assert_eq!(content_type(b"/x.tar.gz"), "application/gzip");
        assert_eq!(content_type(b"/song.aif"), "audio/aiff");
    }

    #[test]
    fn unknown_and_missing_extensions_are_octet_stream() {
        assert_eq!(content_type(b"/README"), DEFAULT);
        assert_eq!(content_type(b"/.profile"), DEFAULT);
        assert_eq!(content_type(b"/a.b/file"), DEFAULT);
        assert_eq!(content_type(b"/x.unknown"), DEFAULT);
        assert_eq!(content_type(b"/x."), DEFAULT);
    }
}

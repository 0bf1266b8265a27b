//! The document root every peer serves: the papers' documents, written once per lab run.
//!
//! - `/microscape/`: the page of the Jigsaw syscall notes (the "microscape" site of "Network Performance Effects of
//!   HTTP/1.1, CSS1, and PNG"): one 42 KB HTML file and 43 GIF images, 0.5 to 20 KB (125,312 B;
//!   168,320 B with the HTML). The sizes are fixed here, not drawn, so every run fetches the same bytes.
//! - `/sizes/N.html`: one document per size of the IO-Lite paper's figure 3 (500 B to 200 KB).
//! - `/digest/jigsaw_2.0.4.zip`: the Content-MD5 measurements' file, 6537455 bytes.
//!
//! Everything is world-readable: Apache's children run as www-data when the lab runs as root.

use bench::fileset::{write_file, FilesetError};
use bench::Workload;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The microscape HTML page's size (the paper's "42KB HTML").
pub const MICROSCAPE_HTML: u64 = 42 * 1024;

/// The 43 inlined GIFs, in page order: banners and photos first, then icons, bullets and spacers.
pub const MICROSCAPE_GIFS: [u64; 43] = [
    20480, 8192, 9216, 10240, 8192, 7168, 6144, 5120, 4608, 4096, 3584, 3072, 3072, 2560, 2560,
    2048, 2048, 2048, 1792, 1536, 1536, 1280, 1280, 1024, 1024, 1024, 1024, 896, 768, 768, 640,
    640, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512, 512,
];

/// The IO-Lite paper's file sizes: 500 bytes, then 1 to 200 KB (KB = 1024 bytes, as flint's file sets).
pub const IO_LITE_SIZES: [u64; 12] = [
    500,
    1024,
    2 * 1024,
    3 * 1024,
    5 * 1024,
    7 * 1024,
    10 * 1024,
    15 * 1024,
    20 * 1024,
    50 * 1024,
    100 * 1024,
    200 * 1024,
];

/// The Content-MD5 measurements' file: jigsaw_2.0.4.zip, `Content-Length: 6537455`.
pub const DIGEST_SIZE: u64 = 6_537_455;
pub const DIGEST_PATH: &str = "/digest/jigsaw_2.0.4.zip";

pub fn gif_path(i: usize) -> String {
    format!("/microscape/img{:02}.gif", i + 1)
}

pub const HTML_PATH: &str = "/microscape/index.html";

pub fn size_path(size: u64) -> String {
    format!("/sizes/{size}.html")
}

/// The microscape page: one page of 44 files, HTML first.
pub fn microscape_workload() -> Workload {
    let files: Vec<String> = std::iter::once(HTML_PATH.to_owned())
        .chain((0..MICROSCAPE_GIFS.len()).map(gif_path))
        .collect();
    Workload::from_pages([("microscape".to_owned(), 1.0, files)])
        .unwrap_or_else(|e| unreachable!("static workload: {e}"))
}

/// One document requested over and over.
pub fn single_file_workload(path: &str) -> Workload {
    Workload::from_paths(&[path.to_owned()])
        .unwrap_or_else(|e| unreachable!("static workload: {e}"))
}

/// Writes every document under `root` (which must exist) and opens it to all readers.
pub fn write(root: &Path, sizes: &[u64]) -> Result<(), FilesetError> {
    let at = |p: &str| root.join(p.trim_start_matches('/'));
    write_html(&at(HTML_PATH))?;
    for (i, &size) in MICROSCAPE_GIFS.iter().enumerate() {
        write_file(&at(&gif_path(i)), size)?;
    }
    for &size in sizes {
        write_file(&at(&size_path(size)), size)?;
    }
    write_file(&at(DIGEST_PATH), DIGEST_SIZE)?;
    open_to_all(root).map_err(|e| FilesetError::Io {
        path: root.display().to_string(),
        source: e,
    })
}

/// A real HTML page that inlines the 43 images, padded to exactly [`MICROSCAPE_HTML`] bytes.
fn write_html(path: &Path) -> Result<(), FilesetError> {
    let io = |e| FilesetError::Io {
        path: path.display().to_string(),
        source: e,
    };
    let mut head = String::from("<html><head><title>microscape</title></head><body>\n");
    for i in 0..MICROSCAPE_GIFS.len() {
        head.push_str(&format!("<img src=\"{}\" alt=\"\">\n", gif_path(i)));
    }
    let tail = "</body></html>\n";
    let line =
        "<p>Network Performance Effects of HTTP/1.1, CSS1, and PNG: the microscape site.</p>\n";
    let mut text = head;
    let target = MICROSCAPE_HTML as usize - tail.len();
    while text.len() + line.len() <= target {
        text.push_str(line);
    }
    text.push_str(&" ".repeat(target - text.len()));
    text.push_str(tail);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(io)
}

/// Directories 0755, files 0644, from `root` down.
fn open_to_all(root: &Path) -> std::io::Result<()> {
    let mut stack: Vec<PathBuf> = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                stack.push(entry.path());
            } else {
                std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o644))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microscape_is_one_html_and_43_gifs_of_about_125_kb() {
        assert_eq!(MICROSCAPE_GIFS.len(), 43);
        let total: u64 = MICROSCAPE_GIFS.iter().sum();
        assert!((120_000..=130_000).contains(&total), "{total}");
        // The page, as docs/lab.md gives it.
        assert_eq!(total + MICROSCAPE_HTML, 168_320);
        assert!(MICROSCAPE_GIFS
            .iter()
            .all(|&s| (512..=20 * 1024).contains(&s)));
        let w = microscape_workload();
        assert_eq!(w.pages.len(), 1);
        assert_eq!(w.pages[0].files.len(), 44);
        assert_eq!(w.urls[0], HTML_PATH);
    }

    #[test]
    fn documents_have_their_exact_sizes_and_are_readable_by_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), &[500, 2048]).expect("write");
        let size = |p: &str| {
            std::fs::metadata(dir.path().join(p.trim_start_matches('/')))
                .expect(p)
                .len()
        };
        assert_eq!(size(HTML_PATH), MICROSCAPE_HTML);
        assert_eq!(size(&gif_path(0)), MICROSCAPE_GIFS[0]);
        assert_eq!(size(&size_path(500)), 500);
        assert_eq!(size(&size_path(2048)), 2048);
        assert_eq!(size(DIGEST_PATH), DIGEST_SIZE);
        let html = std::fs::read_to_string(dir.path().join("microscape/index.html")).unwrap();
        assert!(html.contains("<img src=\"/microscape/img43.gif\""));
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}

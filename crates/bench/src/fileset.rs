//! Document trees for the paper's four mixes, and the files a WebSTONE filelist names.
//!
//! WebSTONE named its test files by their size (`/file3k.html` is 3 KiB, `/file5m.html` 5 MiB),
//! so a filelist is also the recipe for its document tree. [`size_from_name`] reads that
//! convention; every mix below follows it, so `write_filelist` on a mix's workload and
//! `write_mix` produce the same tree. docs/mixes.md gives each mix's pages, sizes and weights.
//!
//! Contents are deterministic, so two trees written apart serve byte-identical responses: text
//! files (.html, .txt, ...) repeat a readable line; everything else is pseudo-random bytes from a
//! seed derived from the file's name (incompressible, like real images and movies).

use crate::workload::{Workload, WorkloadError};
use std::fmt;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

/// The largest file a name may ask for: a typo like `file5000m.mpg` must not fill the disk.
pub const MAX_FILE_SIZE: u64 = 1 << 30;

/// The paper's four workload mixes (section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mix {
    /// 5.1 General modem mix: pages under 20 KB, mostly text with sparse graphics.
    Modem,
    /// 5.2 General mix: files of 1 to 100 KB.
    General,
    /// 5.3 Media rich mix: movies, sounds and large images, 20 KB to megabytes.
    Media,
    /// 5.4 General and media rich mix: the paper's own sample filelist (section 7).
    Mixed,
}

impl Mix {
    /// Every mix, in the paper's order (its sections 5.1 to 5.4).
    pub const ALL: [Mix; 4] = [Mix::Modem, Mix::General, Mix::Media, Mix::Mixed];

    /// `modem`, `general`, `media` or `mixed`: what `Display` writes and `FromStr` reads (any
    /// case), as `flint fileset --mix` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Mix::Modem => "modem",
            Mix::General => "general",
            Mix::Media => "media",
            Mix::Mixed => "mixed",
        }
    }

    fn pages(self) -> &'static [PageDef] {
        match self {
            Mix::Modem => MODEM,
            Mix::General => GENERAL,
            Mix::Media => MEDIA,
            Mix::Mixed => MIXED,
        }
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Mix {
    type Err = FilesetError;
    fn from_str(s: &str) -> Result<Mix, FilesetError> {
        Mix::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| FilesetError::UnknownMix(s.to_owned()))
    }
}

/// Why a file set was not written; each message names the mix, path or names at fault.
#[derive(Debug, thiserror::Error)]
pub enum FilesetError {
    /// Not one of [`Mix::ALL`]'s names (any case); holds the text given.
    #[error("unknown mix {0:?}: expected modem, general, media or mixed")]
    UnknownMix(String),
    /// A file or directory could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The filelist or workload naming the files could not be read.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// The URL paths that do not say their size ([`size_from_name`]); nothing was written.
    #[error(
        "these names do not follow the size convention (a number, then optionally k or m, \
         before the extension: file500.html, file3k.gif, file5m.mpg): {}",
        .0.join(", ")
    )]
    BadNames(Vec<String>),
    /// A name asking for more than [`MAX_FILE_SIZE`]; holds the URL path.
    #[error("{0}: larger than the 1 GiB a file set may hold")]
    TooLarge(String),
    /// A URL path that would be written outside the directory; holds it.
    #[error("{0}: a URL path with '..' or '.' would leave the document root")]
    Escapes(String),
}

/// `(name, weight, files)`; the first file is the page's HTML, the rest what it inlines.
type PageDef = (&'static str, f64, &'static [&'static str]);

/// Pages under 20 KB (page totals 6-17 KiB), mostly text; graphics small and shared.
const MODEM: &[PageDef] = &[
    (
        "home",
        35.0,
        &[
            "/modem/home4k.html",
            "/modem/logo3k.gif",
            "/modem/nav1k.gif",
        ],
    ),
    ("news story", 25.0, &["/modem/news/story9k.html"]),
    (
        "catalogue",
        15.0,
        &[
            "/modem/shop/list6k.html",
            "/modem/shop/item2k.gif",
            "/modem/shop/item3k.gif",
            "/modem/nav1k.gif",
        ],
    ),
    (
        "search results",
        10.0,
        &["/modem/search5k.html", "/modem/nav1k.gif"],
    ),
    (
        "about",
        10.0,
        &["/modem/about3k.html", "/modem/photo12k.jpg"],
    ),
    ("faq", 5.0, &["/modem/help/faq16k.html", "/modem/nav1k.gif"]),
];

/// Files of 1 to 100 KB; page totals 34-185 KiB, the whole tree 0.55 MB.
const GENERAL: &[PageDef] = &[
    (
        "home",
        30.0,
        &[
            "/general/index8k.html",
            "/general/banner24k.gif",
            "/general/logo6k.gif",
            "/general/button2k.gif",
        ],
    ),
    (
        "article",
        25.0,
        &[
            "/general/news/article16k.html",
            "/general/news/photo48k.jpg",
            "/general/button2k.gif",
        ],
    ),
    (
        "product",
        15.0,
        &[
            "/general/shop/product12k.html",
            "/general/shop/large90k.jpg",
            "/general/shop/thumb5k.gif",
            "/general/shop/thumb7k.gif",
        ],
    ),
    (
        "directory",
        15.0,
        &["/general/docs/index32k.html", "/general/button2k.gif"],
    ),
    (
        "gallery",
        10.0,
        &[
            "/general/gallery/page10k.html",
            "/general/gallery/pic40k.jpg",
            "/general/gallery/pic60k.jpg",
            "/general/gallery/pic75k.jpg",
        ],
    ),
    ("manual", 5.0, &["/general/docs/manual100k.html"]),
];

/// Movies, sounds and large images, 20 KB to 4 MB; the whole tree about 9 MB.
const MEDIA: &[PageDef] = &[
    (
        "music",
        30.0,
        &[
            "/media/music/index20k.html",
            "/media/music/cover64k.jpg",
            "/media/music/clip1m.aiff",
        ],
    ),
    (
        "gallery",
        25.0,
        &[
            "/media/gallery/index28k.html",
            "/media/gallery/thumbs80k.jpg",
            "/media/gallery/photo300k.jpg",
            "/media/gallery/photo500k.jpg",
        ],
    ),
    (
        "trailer",
        15.0,
        &[
            "/media/movies/index24k.html",
            "/media/movies/still120k.jpg",
            "/media/movies/trailer4m.mpg",
        ],
    ),
    (
        "quicktime",
        15.0,
        &["/media/tv/index20k.html", "/media/tv/show2m.mov"],
    ),
    (
        "sounds",
        15.0,
        &[
            "/media/sounds/index32k.html",
            "/media/sounds/fx200k.aiff",
            "/media/sounds/voice400k.aiff",
        ],
    ),
];

/// The paper's sample filelist (section 7), decoded: its page sizes are the report's.
const MIXED: &[PageDef] = &[
    (
        "page 0",
        40.0,
        &["/file3k.html", "/file4k.html", "/file5k.html"],
    ),
    (
        "page 1",
        5.0,
        &["/file10k.html", "/file17k.html", "/file20k.html"],
    ),
    ("page 2", 5.0, &["/file5m.html", "/file1m.html"]),
    (
        "page 3",
        20.0,
        &["/file6k.html", "/file7k.html", "/file200k.html"],
    ),
    ("page 4", 20.0, &["/file3m.html", "/file21k.html"]),
    ("page 5", 10.0, &["/file500k.html", "/file13k.html"]),
];

/// A mix's workload, without touching the disk.
pub fn mix_workload(mix: Mix) -> Workload {
    Workload::from_pages(
        mix.pages()
            .iter()
            .map(|&(name, weight, files)| (name.to_owned(), weight, files.to_vec())),
    )
    // The tables above are constants, checked by the tests: this cannot fail.
    .expect("built-in mix tables are valid workloads")
}

/// The size a name asks for: the file name's stem (before the last '.') ends in a decimal number,
/// optionally followed by `k` (KiB) or `m` (MiB). `file500.html` = 500, `file3k.html` = 3072.
pub fn size_from_name(name: &str) -> Option<u64> {
    let file = name.rsplit('/').next()?;
    let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
    let (digits_part, unit) = match stem.as_bytes().last()? {
        b'k' | b'K' => (&stem[..stem.len() - 1], 1024),
        b'm' | b'M' => (&stem[..stem.len() - 1], 1024 * 1024),
        _ => (stem, 1),
    };
    let start = digits_part
        .bytes()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let digits = &digits_part[start..];
    if digits.is_empty() {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Writes the mix's document tree under `dir` and `dir/workload.toml`; returns the latter.
pub fn write_mix(dir: &Path, mix: Mix) -> Result<PathBuf, FilesetError> {
    let workload = mix_workload(mix);
    write_tree(dir, &workload.urls)?;
    let path = dir.join("workload.toml");
    let header = format!(
        "# flint fileset: the WebSTONE {mix} mix (see docs/mixes.md). Sizes follow the names.\n\n"
    );
    std::fs::write(&path, header + &workload.to_toml()).map_err(|e| io(&path, e))?;
    Ok(path)
}

/// Creates under `dir` the files a workload (a WebSTONE filelist, or TOML) names, each sized by
/// its name. Nothing is written unless every name follows the convention.
pub fn write_filelist(dir: &Path, filelist: &Path) -> Result<Vec<PathBuf>, FilesetError> {
    let workload = Workload::load(filelist)?;
    write_tree(dir, &workload.urls)
}

fn io(path: &Path, source: std::io::Error) -> FilesetError {
    FilesetError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Checks every URL first (so a bad name writes nothing), then writes each file.
fn write_tree(dir: &Path, urls: &[String]) -> Result<Vec<PathBuf>, FilesetError> {
    let mut plan = Vec::with_capacity(urls.len());
    let mut bad = Vec::new();
    for url in urls {
        let rel = Path::new(url.trim_start_matches('/'));
        if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Err(FilesetError::Escapes(url.clone()));
        }
        match size_from_name(url) {
            Some(size) if size > MAX_FILE_SIZE => return Err(FilesetError::TooLarge(url.clone())),
            Some(size) => plan.push((dir.join(rel), size)),
            None => bad.push(url.clone()),
        }
    }
    if !bad.is_empty() {
        return Err(FilesetError::BadNames(bad));
    }
    let mut written = Vec::with_capacity(plan.len());
    for (path, size) in plan {
        write_file(&path, size)?;
        written.push(path);
    }
    Ok(written)
}

const TEXT_EXTENSIONS: [&str; 7] = ["html", "htm", "txt", "css", "js", "xml", "json"];

fn is_text(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| TEXT_EXTENSIONS.iter().any(|t| t.eq_ignore_ascii_case(e)))
}

/// FNV-1a: a stable seed from the file name (std's hashers may change between releases).
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

const TEXT_LINE: &[u8] =
    b"flint file set: WebSTONE pages of text and inlined images, sized by name.\n";

/// Writes exactly `size` deterministic bytes to `path`, creating its directories.
pub fn write_file(path: &Path, size: u64) -> Result<(), FilesetError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    let file = std::fs::File::create(path).map_err(|e| io(path, e))?;
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, file);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let written = if is_text(path) {
        write_text(&mut out, &name, size)
    } else {
        write_binary(&mut out, &name, size)
    };
    written.and_then(|()| out.flush()).map_err(|e| io(path, e))
}

/// Writes the first `n` bytes of `bytes` repeated over and over.
fn write_repeated(out: &mut impl Write, bytes: &[u8], mut n: u64) -> std::io::Result<()> {
    while n > 0 {
        let k = bytes.len().min(usize::try_from(n).unwrap_or(usize::MAX));
        out.write_all(&bytes[..k])?;
        n -= k as u64;
    }
    Ok(())
}

/// A small HTML page padded with a readable line; bare lines if `size` cannot hold the frame.
fn write_text(out: &mut impl Write, name: &str, size: u64) -> std::io::Result<()> {
    let head = format!("<html><head><title>{name}</title></head><body><pre>\n");
    let tail: &[u8] = b"</pre></body></html>\n";
    let frame = (head.len() + tail.len()) as u64;
    if size < frame {
        return write_repeated(out, TEXT_LINE, size);
    }
    out.write_all(head.as_bytes())?;
    write_repeated(out, TEXT_LINE, size - frame)?;
    out.write_all(tail)
}

/// Pseudo-random bytes seeded by the name: incompressible, and the same on every run.
fn write_binary(out: &mut impl Write, name: &str, size: u64) -> std::io::Result<()> {
    let mut rng = fastrand::Rng::with_seed(seed_of(name));
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let k = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        rng.fill(&mut buf[..k]);
        out.write_all(&buf[..k])?;
        left -= k as u64;
    }
    Ok(())
}

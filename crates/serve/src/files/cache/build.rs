//! Building an entry: everything a response needs, computed once per file version.
//!
//! This is the cold path (a miss, or a file that changed): it may allocate, format and hash,
//! so that the hot path only copies what is built here.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use super::{etag, CacheCounters, CacheError, Entry, FileVersion, Repr, Settings, Stored};
use crate::digest::Digests;
use crate::mime;
use crate::negotiate::Coding;
use crate::resolve::{FsCounters, Root};
use crate::response::{FieldName, ReprFieldsBuilder};

/// A body read while building.
type Body = Rc<[u8]>;

pub(super) struct Builder<'a> {
    pub settings: &'a Settings,
    pub counters: &'a mut CacheCounters,
    pub open_files: &'a mut usize,
    /// The previous entry for this key, if it was just dropped as changed.
    pub stash: Option<&'a Entry>,
}

pub(super) struct Built {
    pub reprs: [Option<Repr>; 3],
    pub seen: [Option<FileVersion>; 3],
    /// Bodies read while building, to be admitted to memory once the entry has its slot.
    pub loaded: Vec<(Coding, Rc<[u8]>)>,
}

impl Builder<'_> {
    /// Builds the entry of a file `Root::resolve` opened at `fs_path`, with its siblings.
    pub fn entry(
        mut self,
        root: &Root,
        file: File,
        meta: &Metadata,
        fs_path: &[u8],
    ) -> Result<Built, CacheError> {
        let mut opened: [Option<(File, Metadata)>; 3] = [Some((file, meta.clone())), None, None];
        let mut seen = [Some(FileVersion::of(meta)), None, None];
        if self.settings.precompressed {
            let mut path = Vec::with_capacity(fs_path.len() + 3);
            for coding in [Coding::Gzip, Coding::Br] {
                path.clear();
                path.extend_from_slice(fs_path);
                path.extend_from_slice(coding.suffix());
                // What a revalidation stat will compare against, whether the sibling is used.
                self.counters.stats += 1;
                let Ok(stat) = std::fs::metadata(OsStr::from_bytes(&path)) else {
                    continue;
                };
                let version = FileVersion::of(&stat);
                seen[coding as usize] = Some(version);
                if !stat.is_file() {
                    continue;
                }
                // Opened through the root's check, like the file itself: a `.gz` symlink out of
                // the root is not served either.
                let mut fs = FsCounters::default();
                let opened_here = root.open(&path, &mut fs);
                self.counters.add_fs(fs);
                match opened_here? {
                    Some((f, m)) if m.is_file() && FileVersion::of(&m) == version => {
                        opened[coding as usize] = Some((f, m));
                    }
                    _ => {}
                }
            }
        }
        let vary = opened[1].is_some() || opened[2].is_some();
        let content_type = mime::content_type(fs_path);
        let mut reprs: [Option<Repr>; 3] = [None, None, None];
        let mut loaded = Vec::new();
        for coding in Coding::ALL {
            if let Some((file, meta)) = opened[coding as usize].take() {
                let (repr, data) = self.repr(coding, file, &meta, content_type, vary)?;
                reprs[coding as usize] = Some(repr);
                if let Some(data) = data {
                    loaded.push((coding, data));
                }
            }
        }
        Ok(Built {
            reprs,
            seen,
            loaded,
        })
    }

    fn repr(
        &mut self,
        coding: Coding,
        file: File,
        meta: &Metadata,
        content_type: &str,
        vary: bool,
    ) -> Result<(Repr, Option<Body>), CacheError> {
        let settings = self.settings;
        let version = FileVersion::of(meta);
        let size = version.size;
        let small = size <= settings.cache_max_file && size <= settings.cache_bytes;
        let previous = self
            .stash
            .and_then(|e| e.reprs[coding as usize].as_ref())
            .filter(|r| r.version == version)
            .and_then(|r| r.digests);
        let need_digest = settings.digest && previous.is_none();
        // The file is open now: read the identity body while we have it (the first request is
        // most likely a GET for it); siblings wait until asked for, unless they must be hashed.
        let data = if small && (coding == Coding::Identity || need_digest) {
            Some(read_body(&file, size, self.counters)?)
        } else {
            None
        };
        let digests = if need_digest {
            self.counters.digests_computed += 1;
            Some(match &data {
                Some(d) => Digests::of_bytes(d),
                None => Digests::of_file(&file, size).map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => CacheError::Changed,
                    _ => CacheError::Io(e),
                })?,
            })
        } else {
            previous
        };
        let stored = if small {
            Stored::Unloaded
        } else if *self.open_files < settings.max_open_files {
            *self.open_files += 1;
            Stored::Fd(Rc::new(file))
        } else {
            Stored::Reopen
        };

        let etag = etag::of(&version);
        let mtime_secs = meta.mtime().max(0);
        let last_modified =
            httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(mtime_secs as u64));

        // One list of fields, each written as HTTP/1.1 text and as a field (HTTP/2), so that
        // neither encoding is parsed back from the other.
        let server = &settings.server_name[..];
        let mut heads = ReprFieldsBuilder::default();
        heads.push(FieldName::Server, server);
        if let Some(alt_svc) = &settings.alt_svc {
            heads.push(FieldName::AltSvc, alt_svc);
        }
        heads.push(FieldName::ContentType, content_type.as_bytes());
        heads.push(FieldName::LastModified, last_modified.as_bytes());
        heads.push(FieldName::ETag, &etag);
        heads.push(FieldName::AcceptRanges, b"bytes");
        if vary {
            heads.push(FieldName::Vary, b"Accept-Encoding");
        }
        if let Some(token) = coding.token() {
            heads.push(FieldName::ContentEncoding, token.as_bytes());
        }
        if let Some(d) = &digests {
            let value = [b"sha-256=:", d.sha256_base64(), b":"].concat();
            heads.push(FieldName::ReprDigest, &value);
        }
        heads.end_partial();
        if let Some(d) = &digests {
            heads.push(FieldName::ContentMd5, d.md5_base64());
        }
        heads.push(FieldName::ContentLength, size.to_string().as_bytes());
        heads.end_full();
        // A 304's.
        heads.push(FieldName::Server, server);
        if let Some(alt_svc) = &settings.alt_svc {
            heads.push(FieldName::AltSvc, alt_svc);
        }
        heads.push(FieldName::LastModified, last_modified.as_bytes());
        heads.push(FieldName::ETag, &etag);
        if vary {
            heads.push(FieldName::Vary, b"Accept-Encoding");
        }

        let repr = Repr {
            version,
            etag: Box::from(etag),
            last_modified: last_modified.into_bytes().into_boxed_slice(),
            mtime_secs,
            heads: Rc::new(heads.build()),
            digests,
            stored,
        };
        Ok((repr, data))
    }
}

/// Reads the first `size` bytes of a file into a shared buffer; a short read means the file
/// changed since its stat.
pub(super) fn read_body(
    file: &File,
    size: u64,
    counters: &mut CacheCounters,
) -> Result<Rc<[u8]>, CacheError> {
    counters.body_loads += 1;
    let mut buf = vec![0u8; size as usize];
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], done as u64) {
            Ok(0) => return Err(CacheError::Changed),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CacheError::Io(e)),
        }
    }
    Ok(Rc::from(buf))
}

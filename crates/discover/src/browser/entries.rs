//! A page's record turned into the workload's entries: the document first, then each file the
//! browser fetched for the page, once, in the order it asked for them, with its initiator.
//! Requests of a frame belong to the frame's own page (as in HTML mode, an iframe is a page of
//! its own); requests to other origins are counted, or listed as comments with
//! `--all-origins` (`flint bench` requests one origin).

use super::page::{Load, Request};
use crate::{Entry, File};
use std::collections::HashSet;
use url::{Position, Url};

/// A page as the browser loaded it.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// The document first.
    pub entries: Vec<Entry>,
    /// Same-origin frame documents: pages of their own for the crawl.
    pub frames: Vec<Url>,
    /// What the entries leave out.
    pub notes: Vec<String>,
    /// Requests beyond `--max-files`, not listed.
    pub beyond: u64,
    /// The document's own response had not ended at the page timeout: its bytes are those
    /// that had come.
    pub document_cut: bool,
}

/// The entries of the page at `page` (the URL the browser was sent to), at most `max_files`
/// beside the document.
pub fn entries(
    load: &Load,
    page: &Url,
    all_origins: bool,
    max_files: usize,
) -> Result<Recorded, String> {
    let main = |r: &&Request| r.frame == load.main_frame && r.resource_type == "Document";
    let Some(doc) = load.requests.iter().find(main) else {
        return Err("Chromium made no request for the page".into());
    };
    // A document whose response came but never ended in time (a script holding its parser) is
    // cut at the page timeout with the files it had asked for, as a page that never goes quiet.
    let document_cut = load.timed_out
        && matches!(doc.status, Some(200..=299))
        && doc.failed.is_none()
        && doc.bytes.is_none();
    if let Some(why) = unusable(doc).filter(|_| !document_cut) {
        return Err(format!("Chromium could not load it: {why}"));
    }
    let origin = page.origin();
    let mut out = Recorded {
        document_cut,
        ..Recorded::default()
    };
    let mut seen = HashSet::new();
    let (mut other_origin, mut beyond) = (0u64, 0u64);
    let url_of = |r: &Request| {
        let mut url = Url::parse(&r.url).ok()?;
        url.set_fragment(None);
        Some(url)
    };
    for (i, r) in load.requests.iter().enumerate() {
        let Some(url) = url_of(r) else {
            continue;
        };
        let subframe = r.frame != load.main_frame;
        let frame_document = subframe && r.resource_type == "Document";
        if subframe && !frame_document {
            continue; // the frame's page lists it
        }
        if !seen.insert(url.to_string()) {
            continue; // one request per file and page
        }
        // One that gave no file (cut off, failed) gives way to a later load of the same file
        // that did, listed where the file was first asked for.
        let r = match unusable(r) {
            Some(_) if !std::ptr::eq(r, doc) && !frame_document => load.requests[i + 1..]
                .iter()
                .find(|later| {
                    later.frame == load.main_frame
                        && unusable(later).is_none()
                        && url_of(later).as_ref() == Some(&url)
                })
                .unwrap_or(r),
            _ => r,
        };
        let elsewhere = url.origin() != origin;
        if elsewhere && !frame_document && !all_origins {
            other_origin += 1;
            continue;
        }
        if !std::ptr::eq(r, doc) && out.entries.len() > max_files {
            beyond += 1;
            continue;
        }
        if elsewhere {
            if frame_document {
                out.entries.push(skipped(
                    url.as_str(),
                    "an iframe on another origin: not listed (bench requests the one origin)",
                ));
            } else {
                let bytes = r.bytes.map_or("no".into(), |b| b.to_string());
                out.entries.push(skipped(
                    url.as_str(),
                    &format!(
                        "another origin ({bytes} bytes, initiator {}): bench requests the one origin",
                        r.initiator
                    ),
                ));
            }
            continue;
        }
        let path = target(&url);
        if frame_document {
            out.entries
                .push(skipped(&path, "an iframe: a page of its own"));
            out.frames.push(url);
            continue;
        }
        if let Some(why) = unusable(r).filter(|_| !std::ptr::eq(r, doc)) {
            out.entries.push(skipped(
                &path,
                &format!("{why} (initiator {})", r.initiator),
            ));
            continue;
        }
        let from = (r.redirects.first())
            .and_then(|f| Url::parse(f).ok())
            .filter(|f| f.origin() == origin)
            .map(|f| target(&f))
            .filter(|f| *f != path);
        out.entries.push(Entry::File(File {
            path,
            bytes: r.bytes.unwrap_or(0),
            content_type: r.content_type.clone(),
            redirected_from: from,
            initiator: Some(r.initiator),
        }));
    }
    if other_origin > 0 {
        out.notes.push(format!(
            "{other_origin} requests to other origins left out (--all-origins lists them)"
        ));
    }
    out.beyond = beyond;
    if beyond > 0 {
        out.notes.push(format!(
            "{beyond} more requests beyond --max-files {max_files}: not listed"
        ));
    }
    if load.timed_out {
        out.notes.push(
            "the network was not idle at --page-timeout: requests still loading then are comments"
                .into(),
        );
    }
    if document_cut {
        out.notes.push(
            "the document itself was still loading at --page-timeout: its size is that of the \
             crawler's own fetch, its files those the browser had asked for by then"
                .into(),
        );
    }
    let cut = load.requests.iter().filter(|r| r.cut_by_navigation).count();
    if cut > 0 {
        out.notes.push(format!(
            "{cut} requests were in flight when a frame navigated away (its document replaced, \
             their end never told): listed with the status and Content-Length their response \
             had, if it had come; else comments"
        ));
    }
    if load.dialogs > 0 {
        out.notes.push(format!(
            "JavaScript dialogs (alert, confirm, prompt, beforeunload) answered OK: {}",
            load.dialogs
        ));
    }
    Ok(out)
}

/// Why a request gave no file: it failed, its status is not 2xx, or it never ended.
fn unusable(r: &Request) -> Option<String> {
    if let Some(f) = &r.failed {
        return Some(f.clone());
    }
    match r.status {
        Some(s) if !(200..300).contains(&s) => Some(format!("{s} {}", wire::head::reason(s))),
        _ if r.cut_by_navigation && r.bytes.is_none() => {
            Some("cut off when the page navigated away".into())
        }
        _ if r.bytes.is_none() => Some("still loading at --page-timeout".into()),
        _ => None,
    }
}

fn target(url: &Url) -> String {
    url[Position::BeforePath..Position::AfterQuery].to_owned()
}

fn skipped(url: &str, reason: &str) -> Entry {
    Entry::Skipped {
        url: url.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, frame: &str, ty: &str) -> Request {
        Request {
            url: url.into(),
            redirects: Vec::new(),
            frame: frame.into(),
            resource_type: ty.into(),
            initiator: "parser",
            status: Some(200),
            content_type: Some("text/plain".into()),
            bytes: Some(10),
            failed: None,
            cut_by_navigation: false,
        }
    }

    #[test]
    fn frames_other_origins_failures_and_repeats() {
        let mut failed = req("http://h/gone.png", "M", "Image");
        failed.status = Some(404);
        let mut moved = req("http://h/new.js", "M", "Script");
        moved.redirects = vec!["http://h/old.js".into()];
        moved.initiator = "script";
        let load = Load {
            requests: vec![
                req("http://h/p.html", "M", "Document"),
                req("http://h/a.css", "M", "Stylesheet"),
                req("http://h/a.css#x", "M", "Stylesheet"),
                req("http://cdn/x.js", "M", "Script"),
                req("http://h/f.html", "F", "Document"),
                req("http://h/in-frame.png", "F", "Image"),
                failed,
                moved,
            ],
            main_frame: "M".into(),
            timed_out: false,
            dialogs: 0,
        };
        let page = Url::parse("http://h/p.html").unwrap();
        let rec = entries(&load, &page, false, 100).unwrap();
        let lines: Vec<String> = rec
            .entries
            .iter()
            .map(|e| match e {
                Entry::File(f) => format!(
                    "{} {} {:?} {:?}",
                    f.path, f.bytes, f.initiator, f.redirected_from
                ),
                Entry::Skipped { url, reason } => format!("# {url}: {reason}"),
            })
            .collect();
        assert_eq!(
            lines,
            [
                "/p.html 10 Some(\"parser\") None",
                "/a.css 10 Some(\"parser\") None",
                "# /f.html: an iframe: a page of its own",
                "# /gone.png: 404 Not Found (initiator parser)",
                "/new.js 10 Some(\"script\") Some(\"/old.js\")",
            ]
        );
        assert_eq!(rec.frames, [Url::parse("http://h/f.html").unwrap()]);
        assert_eq!(
            rec.notes,
            ["1 requests to other origins left out (--all-origins lists them)"]
        );
        let all = entries(&load, &page, true, 100).unwrap();
        assert!(all.entries.contains(&skipped(
            "http://cdn/x.js",
            "another origin (10 bytes, initiator parser): bench requests the one origin"
        )));
        assert!(all.notes.is_empty());
        let cut = entries(&load, &page, false, 1).unwrap();
        assert_eq!(cut.entries.len(), 2);
        assert_eq!(
            cut.notes[1],
            "3 more requests beyond --max-files 1: not listed"
        );
    }

    /// A file cut off when a frame navigated, then loaded in full (the new document asks for
    /// it again): the full load is the file, where the file was first asked for.
    #[test]
    fn a_completed_load_replaces_a_cut_one_of_the_same_file() {
        let mut cut = req("http://h/a.png", "M", "Image");
        cut.cut_by_navigation = true;
        cut.bytes = None;
        let mut full = req("http://h/a.png", "M", "Image");
        full.bytes = Some(42);
        let load = Load {
            requests: vec![
                req("http://h/p.html", "M", "Document"),
                cut,
                req("http://h/b.png", "M", "Image"),
                full,
            ],
            main_frame: "M".into(),
            timed_out: false,
            dialogs: 0,
        };
        let page = Url::parse("http://h/p.html").unwrap();
        let rec = entries(&load, &page, false, 100).unwrap();
        let files: Vec<(&str, u64)> = rec
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::File(f) => Some((f.path.as_str(), f.bytes)),
                Entry::Skipped { .. } => None,
            })
            .collect();
        assert_eq!(files, [("/p.html", 10), ("/a.png", 42), ("/b.png", 10)]);
    }

    #[test]
    fn a_page_the_browser_could_not_load_is_an_error() {
        let mut doc = req("http://h/p.html", "M", "Document");
        doc.failed = Some("net::ERR_CONNECTION_REFUSED".into());
        let load = Load {
            requests: vec![doc],
            main_frame: "M".into(),
            timed_out: false,
            dialogs: 0,
        };
        let page = Url::parse("http://h/p.html").unwrap();
        let err = entries(&load, &page, false, 10).unwrap_err();
        assert!(err.contains("net::ERR_CONNECTION_REFUSED"), "{err}");
    }

    #[test]
    fn a_document_still_loading_at_the_timeout_is_cut_with_its_files() {
        let mut doc = req("http://h/p.html", "M", "Document");
        doc.bytes = None;
        let mut late = req("http://h/late.png", "M", "Image");
        late.bytes = None;
        let mut load = Load {
            requests: vec![doc, req("http://h/a.png", "M", "Image"), late],
            main_frame: "M".into(),
            timed_out: true,
            dialogs: 1,
        };
        let page = Url::parse("http://h/p.html").unwrap();
        let rec = entries(&load, &page, false, 10).unwrap();
        assert!(rec.document_cut);
        let paths: Vec<&str> = rec
            .entries
            .iter()
            .map(|e| match e {
                Entry::File(f) => f.path.as_str(),
                Entry::Skipped { url, .. } => url.as_str(),
            })
            .collect();
        assert_eq!(paths, ["/p.html", "/a.png", "/late.png"]);
        assert!(matches!(&rec.entries[2], Entry::Skipped { reason, .. }
            if reason.starts_with("still loading at --page-timeout")));
        assert!(rec.notes.iter().any(|n| n.contains("document itself")));
        assert!(rec.notes.iter().any(|n| n.ends_with("answered OK: 1")));
        // Not cut when the network went quiet: a document that never ended is then an error.
        load.timed_out = false;
        assert!(entries(&load, &page, false, 10).is_err());
    }
}

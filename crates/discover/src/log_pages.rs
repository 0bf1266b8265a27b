//! Pages from an access log alone: what visitors' browsers requested, grouped by Referer.
//!
//! A browser sends the page's URL as the Referer of each file it loads for that page, and a
//! stylesheet's URL as the Referer of what the stylesheet loads. So:
//! - a path is a page when it was requested and is the Referer of another request (and is not a
//!   stylesheet, `.css`), or when it looks like a document (ends in `/`, `.html`, `.htm`,
//!   `.xhtml`, `.php`, `.asp`, `.aspx`, `.jsp`, or has no extension): a page with no files of
//!   its own, reached by a link, is still a page;
//! - every other path requested with a page as its Referer joins that page; one requested from
//!   a stylesheet joins the pages of that stylesheet;
//! - a path that joins no page is a page of its own;
//! - each page's weight is how often its own path was requested (GET, 200 or 304).
//!
//! Files are listed in the order the log first shows them, the page's document first. The log
//! tells neither sizes nor types: the workload's comments say so.

use crate::access_log::Counts;
use crate::{Entry, File, Page};
use std::collections::{HashMap, HashSet};

/// The pages a log describes, in order of first request.
pub fn pages(counts: &Counts) -> Vec<Page> {
    let requested: HashMap<&str, usize> = counts
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.path.as_str(), i))
        .collect();
    let referers: HashSet<&str> = counts
        .paths
        .iter()
        .flat_map(|p| p.referers.iter().map(|(r, _)| r.as_str()))
        .collect();
    let is_page = |path: &str| {
        requested.contains_key(path)
            && !extension(path).eq_ignore_ascii_case("css")
            && (referers.contains(path) || looks_like_document(path))
    };
    let mut pages: Vec<Page> = Vec::new();
    let mut page_index: HashMap<&str, usize> = HashMap::new();
    for p in counts.paths.iter().filter(|p| is_page(&p.path)) {
        page_index.insert(&p.path, pages.len());
        pages.push(page(&p.path, p.count));
    }
    for p in counts.paths.iter().filter(|p| !is_page(&p.path)) {
        let mut joined = Vec::new();
        pages_of(
            &p.path,
            counts,
            &requested,
            &is_page,
            &mut HashSet::new(),
            &mut joined,
        );
        let joined: Vec<usize> = joined
            .iter()
            .filter_map(|r| page_index.get(r.as_str()).copied())
            .collect();
        if joined.is_empty() {
            pages.push(page(&p.path, p.count));
            continue;
        }
        for i in dedup(joined) {
            pages[i].entries.push(file(&p.path));
        }
    }
    pages
}

/// The pages `path` was requested from, directly or through stylesheets.
fn pages_of(
    path: &str,
    counts: &Counts,
    requested: &HashMap<&str, usize>,
    is_page: &dyn Fn(&str) -> bool,
    visited: &mut HashSet<String>,
    out: &mut Vec<String>,
) {
    if !visited.insert(path.to_owned()) {
        return;
    }
    let Some(&i) = requested.get(path) else {
        return;
    };
    for (referer, _) in &counts.paths[i].referers {
        if is_page(referer) {
            out.push(referer.clone());
        } else {
            pages_of(referer, counts, requested, is_page, visited, out);
        }
    }
}

fn dedup(v: Vec<usize>) -> Vec<usize> {
    let mut seen = HashSet::new();
    v.into_iter().filter(|i| seen.insert(*i)).collect()
}

fn page(path: &str, count: u64) -> Page {
    Page {
        path: path.to_owned(),
        redirected_from: None,
        weight: count as f64,
        entries: vec![file(path)],
        notes: Vec::new(),
        forms: Default::default(),
    }
}

fn file(path: &str) -> Entry {
    Entry::File(File {
        path: path.to_owned(),
        bytes: 0,
        content_type: None,
        redirected_from: None,
        initiator: None,
    })
}

/// The extension of the path's last segment (query aside), or "".
fn extension(path: &str) -> &str {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let last = path.rsplit('/').next().unwrap_or(path);
    last.rsplit_once('.').map_or("", |(_, e)| e)
}

fn looks_like_document(path: &str) -> bool {
    let ext = extension(path).to_ascii_lowercase();
    path.split('?').next().unwrap_or(path).ends_with('/')
        || matches!(
            ext.as_str(),
            "" | "html" | "htm" | "xhtml" | "php" | "asp" | "aspx" | "jsp"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(path: &str, referer: Option<&str>) -> String {
        let r = referer.map_or("-".to_owned(), |r| format!("http://h{r}"));
        format!("1 - - [d] \"GET {path} HTTP/1.1\" 200 5 \"{r}\" \"ua\"\n")
    }

    #[test]
    fn files_join_the_page_they_were_requested_from() {
        let log = [
            line("/", None),
            line("/s.css", Some("/")),
            line("/bg.png", Some("/s.css")),
            line("/logo.png", Some("/")),
            line("/", None),
            line("/about.html", Some("/")),
            line("/file.zip", None),
            line("/logo.png", Some("/about.html")),
        ]
        .concat();
        let counts = Counts::from_reader(log.as_bytes()).unwrap();
        let pages = pages(&counts);
        let summary: Vec<(String, f64, Vec<String>)> = pages
            .iter()
            .map(|p| {
                (
                    p.path.clone(),
                    p.weight,
                    p.files().map(|f| f.path.clone()).collect(),
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            summary,
            [
                ("/".into(), 2.0, s(&["/", "/s.css", "/bg.png", "/logo.png"])),
                ("/about.html".into(), 1.0, s(&["/about.html", "/logo.png"])),
                ("/file.zip".into(), 1.0, s(&["/file.zip"])),
            ]
        );
    }
}

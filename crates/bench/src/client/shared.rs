//! `--connections-per-client N`: a Webchild with N connections that share each page's files,
//! as a browser fetches a page over six HTTP/1.1 connections (or, in 1997, four HTTP/1.0 ones
//! at a time). Each connection is a member of the Webchild's group: a Webchild of its own in
//! the loop (its token, its timer, its `Child` and its wire), except that the group picks the
//! pages (its random stream and quota are the Webchild's) and deals their files: a member takes
//! the page's next file when it is free, and goes idle when none is left; the member whose
//! response ends the page's last file records the page (from the page's start to that last
//! byte: a page time, measured) and starts the next one, waking the idle members. Keep-alive
//! connections stay open from page to page; HTTP/1.0 opens one per file.
//!
//! An application workload's session is the Webchild's, not a connection's: the group keeps
//! its one cookie jar, its values and its data rows (drawn as the group picks the page), and a
//! member lends it for each request it builds and each response it judges ([`in_session`]).
//! As pipelining's batches and HTTP/2's streams do, the files after one that extracts values
//! are dealt only once its response is complete: they may need its values or its cookies, and
//! are never sent without them (a value it failed to extract fails the page, so they are not
//! sent at all).
//!
//! A member's page start and its going idle are `page_flow.rs`'s, beside a single
//! connection's start (the two call each other); this file is the group and its dealing.
//!
//! Only the closed loop without think time: a page starts as the previous one ends (the runner
//! refuses `--rate`, `--think`, `--redirect`, `--pipeline` and HTTP/2 with groups).

use super::app::{self, AppExchange};
use super::exchange::PageRef;
use super::page::Child;
use super::{RunShared, ThreadState};
use crate::app::session::Session;

/// One Webchild's shared page: what its members deal among them.
pub(super) struct Group {
    /// Picks the pages: the Webchild's random streams and quota (taken out while it picks).
    pager: Option<Child>,
    page: PageRef,
    files: usize,
    /// The page's next file no member has taken yet.
    next_file: usize,
    /// Files taken and not done.
    in_flight: usize,
    /// No file of the page has failed.
    ok: bool,
    /// A page is in progress (picked, its last file not done).
    busy: bool,
    /// The quota is done: members finish.
    done: bool,
    /// Members with nothing to do, one bit each: woken when a page starts, when the files
    /// waiting for an extraction may go, or when the quota ends.
    idle: u64,
    /// An application workload: the Webchild's session, shared by its members.
    session: Option<Box<Session>>,
    /// The page's file in flight that extracts values: the files after it wait for it.
    extracting: Option<usize>,
}

/// The most connections a Webchild may have (its idle members are bits of a `u64`).
pub const MAX_CONNECTIONS_PER_CHILD: usize = 64;

impl Group {
    /// The group of Webchild `id`, whose first member is in slot `first`.
    pub(super) fn new(first: usize, id: usize, sh: &RunShared<'_>) -> Self {
        Group {
            pager: Some(Child::new(first, id, sh)),
            page: PageRef::NONE,
            files: 0,
            next_file: 0,
            in_flight: 0,
            ok: true,
            busy: false,
            done: false,
            idle: 0,
            session: (sh.workload.plan()).map(|plan| Box::new(app::new_session(sh, plan, id))),
            extracting: None,
        }
    }

    /// The quota is done: members finish.
    #[inline]
    pub(super) fn is_done(&self) -> bool {
        self.done
    }

    /// A page is in progress: a member with no file waits for it (`park`).
    #[inline]
    pub(super) fn is_busy(&self) -> bool {
        self.busy
    }

    /// The pager, to pick the next page with (none while it picks).
    #[inline]
    pub(super) fn take_pager(&mut self) -> Option<Child> {
        self.pager.take()
    }

    /// The pager back with its pick (`picked`: false when the quota is done), which becomes
    /// the group's page, an application's data rows drawn for all the members. False when no
    /// page starts (the group done): the quota done, or a `unique` data set out of rows.
    pub(super) fn begin_page(&mut self, sh: &RunShared<'_>, pager: Child, picked: bool) -> bool {
        let drawn = match (sh.workload.plan(), &mut self.session) {
            (Some(plan), Some(session)) if picked => {
                app::start_session_page(session, plan, pager.page.index)
            }
            _ => true,
        };
        if picked && drawn {
            (self.page, self.files) = (pager.page, pager.files(sh.workload));
            (self.next_file, self.in_flight, self.ok) = (0, 0, true);
            self.extracting = None;
            self.busy = true;
        } else {
            self.done = true;
        }
        self.pager = Some(pager);
        picked && drawn
    }

    /// Member `j` has nothing to do until it is woken (`wake`).
    #[inline]
    pub(super) fn park(&mut self, j: usize) {
        self.idle |= 1 << j;
    }
}

/// The group of member `ch`, and its index in the group.
pub(super) fn of(ch: &Child, cx: &ThreadState<'_>) -> (usize, usize) {
    (ch.slot / cx.members, ch.slot % cx.members)
}

/// Wakes group `g`'s idle members (their timers, now): each joins the page or finishes.
pub(super) fn wake(cx: &mut ThreadState<'_>, g: usize, now: u64) {
    let members = cx.members;
    let mut idle = std::mem::take(&mut cx.groups[g].idle);
    while idle != 0 {
        let j = idle.trailing_zeros() as usize;
        idle &= idle - 1;
        cx.timers.arm(g * members + j, now);
    }
}

/// The page's next file for member `ch`, if one is left (the member joins the page: it becomes
/// `ch.page`); none while a file that extracts values is in flight (the files after it wait).
pub(super) fn take_file(ch: &mut Child, cx: &mut ThreadState<'_>) -> Option<usize> {
    let (g, _) = of(ch, cx);
    let group = &mut cx.groups[g];
    if !group.busy || !group.ok || group.next_file >= group.files || group.extracting.is_some() {
        return None;
    }
    ch.page = group.page;
    let file = group.next_file;
    group.next_file += 1;
    group.in_flight += 1;
    let plan = cx.sh.workload.plan();
    if plan.is_some_and(|p| app::extracts(p, group.page.url(cx.sh.workload, file))) {
        group.extracting = Some(file);
    }
    Some(file)
}

/// Member `ch`'s file `file` is done at `now` (`ok`: a success): when it was the page's last,
/// the page is recorded, ending at this last byte; when the files after it waited for its
/// values, the idle members are woken to them.
pub(super) fn file_done(ch: &Child, cx: &mut ThreadState<'_>, file: usize, ok: bool, now: u64) {
    let (g, _) = of(ch, cx);
    let group = &mut cx.groups[g];
    group.in_flight -= 1;
    group.ok &= ok;
    let waited_for = group.extracting == Some(file);
    if waited_for {
        group.extracting = None;
    }
    let released = waited_for && group.ok && group.next_file < group.files;
    let last = group.in_flight == 0 && (!group.ok || group.next_file >= group.files);
    if last && group.busy {
        group.busy = false;
        let (page, hit) = (group.page, group.ok);
        Child::record_page(cx, page, hit, now);
    }
    if released {
        wake(cx, g, now);
    }
}

/// Runs `f` on member `ch`'s exchange `app` with the Webchild's session in it: lent for one
/// request built or one response judged, and taken back (the member's own session is a spare,
/// never used). `f` must not start another request of the member: it is a leaf.
pub(super) fn in_session<R>(
    ch: &Child,
    cx: &mut ThreadState<'_>,
    app: &mut AppExchange,
    f: impl FnOnce(&mut AppExchange, &mut ThreadState<'_>) -> R,
) -> R {
    if cx.members == 1 {
        return f(app, cx);
    }
    let (g, _) = of(ch, cx);
    if let Some(shared) = &mut cx.groups[g].session {
        app.swap_session(shared);
    }
    let r = f(app, cx);
    if let Some(shared) = &mut cx.groups[g].session {
        app.swap_session(shared);
    }
    r
}

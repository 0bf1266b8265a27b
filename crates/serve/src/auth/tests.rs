use super::*;

use crate::config::AuthZone;

// `htpasswd -nbB u p` (cost 5) and `htpasswd -nb5 w p`.
const USERS: &str = "u:$2y$05$R9ubg3UY5SMx5nrVMl7vXO/xxJhNvlMcqx3Ad3WR84cUYM5yg3AyW\n\
    w:$6$hSFoavY.v2VOQHwX$7zq5yS5dzY.2EcntTH8vW8/S1J1OnSCnsaYFw8epeSKzdohsIYOLBQGvq1a7.GjUd7JokTsJKO30wLVv7VKu30\n";

fn guard(prefixes: &[&str], max_failures: u32) -> (tempfile::TempDir, Guard) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("htpasswd");
    std::fs::write(&file, USERS).unwrap();
    let config = Config {
        auth: (prefixes.iter())
            .map(|p| AuthZone {
                prefix: crate::config::parse_auth_prefix(p).unwrap(),
                file: file.clone(),
                realm: format!("realm {p}"),
            })
            .collect(),
        auth_max_failures: max_failures,
        ..Config::default()
    };
    let shared = Shared::load(&config).unwrap().unwrap();
    (dir, Guard::new(shared))
}

fn basic(user_pass: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_pass)
    )
}

/// The head of a GET of `target`, with `Authorization: auth` when given.
fn head(target: &str, auth: Option<&str>) -> String {
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    format!("GET {target} HTTP/1.1\r\nHost: x\r\n{auth}\r\n")
}

fn check_from(
    g: &mut Guard,
    peer: IpAddr,
    target: &str,
    auth: Option<&str>,
    stats: &mut ServerStats,
) -> Verdict {
    check_at(g, peer, target, auth, Instant::now(), stats)
}

/// [`check_from`] at the instant `now`: the check budget refills with time, so a test of it
/// gives every check the same instant (on a loaded machine a few hashes take long enough to
/// refill one).
fn check_at(
    g: &mut Guard,
    peer: IpAddr,
    target: &str,
    auth: Option<&str>,
    now: Instant,
    stats: &mut ServerStats,
) -> Verdict {
    let head = head(target, auth);
    let limits = wire::RequestLimits::default();
    let req = wire::parse_request(head.as_bytes(), &limits)
        .unwrap()
        .unwrap();
    let v = g.check(&req, peer, now, stats);
    // Answered as it was refused (the protocols count a denial where they answer it).
    if let Verdict::Denied(d) = &v {
        d.count(req.authorization.is_some(), stats);
    }
    v
}

fn check(g: &mut Guard, target: &str, auth: Option<&str>, stats: &mut ServerStats) -> Verdict {
    check_from(g, IpAddr::from([10, 0, 0, 1]), target, auth, stats)
}

#[test]
fn prefixes_hold_whole_segments_and_the_longest_wins() {
    let (_d, mut g) = guard(&["/private/", "/private/inner"], 10);
    let mut stats = ServerStats::default();
    for open in ["/", "/privateer", "/public/private/x", "/privat"] {
        assert!(
            matches!(check(&mut g, open, None, &mut stats), Verdict::Open),
            "{open}"
        );
    }
    let challenge = |v: Verdict| match v {
        Verdict::Denied(Denial::Challenge(line)) => String::from_utf8(line.to_vec()).unwrap(),
        other => panic!("{other:?}"),
    };
    // Escapes, dot segments and doubled slashes are normalised before the prefix is compared.
    for (target, realm) in [
        ("/private", "/private/"),
        ("/private/a.html", "/private/"),
        ("//private/./a", "/private/"),
        ("/%70rivate/a", "/private/"),
        ("http://example.com/private/a?x", "/private/"),
        ("/private/inner/b", "/private/inner"),
    ] {
        let line = challenge(check(&mut g, target, None, &mut stats));
        assert_eq!(
            line,
            format!("Basic realm=\"realm {realm}\", charset=\"UTF-8\""),
            "{target}"
        );
    }
    assert_eq!(stats.auth_missing, 6);
}

#[test]
fn credentials_are_verified_once_then_taken_from_the_thread_cache() {
    let (_d, mut g) = guard(&["/"], 10);
    let mut stats = ServerStats::default();
    for (user, pass) in [("u", "p"), ("w", "p")] {
        let header = basic(&format!("{user}:{pass}"));
        for _ in 0..3 {
            match check(&mut g, "/a", Some(&header), &mut stats) {
                Verdict::Allowed(u) => assert_eq!(&u[..], user.as_bytes()),
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!((stats.auth_ok, stats.auth_cached), (6, 4));
    // The scheme is case-insensitive; the token is not.
    let lower = basic("u:p").replace("Basic", "bAsIc");
    assert!(matches!(
        check(&mut g, "/a", Some(&lower), &mut stats),
        Verdict::Allowed(_)
    ));
    for wrong in [
        basic("u:q"),
        basic("nobody:p"),
        basic("up"),
        "Basic !!!".into(),
        "Bearer abc".into(),
        "Basic".into(),
    ] {
        let v = check(&mut g, "/a", Some(&wrong), &mut stats);
        assert!(
            matches!(v, Verdict::Denied(Denial::Challenge(_))),
            "{wrong}: {v:?}"
        );
    }
    assert_eq!(stats.auth_failed, 6);
}

#[test]
fn a_client_past_its_failures_is_refused_unchecked_until_its_window_ends() {
    let (_d, mut g) = guard(&["/"], 3);
    let mut stats = ServerStats::default();
    let good = basic("u:p");
    // Verified before the failures: still let through from the cache.
    assert!(matches!(
        check(&mut g, "/", Some(&good), &mut stats),
        Verdict::Allowed(_)
    ));
    for _ in 0..3 {
        let v = check(&mut g, "/", Some(&basic("u:wrong")), &mut stats);
        assert!(matches!(v, Verdict::Denied(Denial::Challenge(_))));
    }
    let v = check(&mut g, "/", Some(&basic("w:p")), &mut stats);
    match v {
        Verdict::Denied(d @ Denial::Limited(secs)) => {
            assert_eq!(d.status(), 429);
            assert!((1..=60).contains(&secs), "{secs}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        check(&mut g, "/", Some(&good), &mut stats),
        Verdict::Allowed(_)
    ));
    assert_eq!((stats.auth_failed, stats.auth_limited), (3, 1));
    // Another address is not limited; the window's end frees the first.
    let other = IpAddr::from([10, 0, 0, 2]);
    let v = check_from(&mut g, other, "/", Some(&basic("w:p")), &mut stats);
    assert!(matches!(v, Verdict::Allowed(_)));
    let later = Instant::now() + Duration::from_secs(61);
    let limiter = g.shared.limiter.lock().unwrap();
    assert_eq!(limiter.limited(IpAddr::from([10, 0, 0, 1]), later), None);
}

#[test]
fn ipv6_clients_are_counted_by_their_64() {
    let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
    let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
    let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
    assert_eq!(client_of(a), client_of(b));
    assert_ne!(client_of(a), client_of(c));
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
    assert_eq!(client_of(mapped), IpAddr::from([10, 0, 0, 1]));
}

#[test]
fn the_verified_cache_is_bounded() {
    let (_d, mut g) = guard(&["/"], 10);
    let now = Instant::now();
    for i in 0..(MAX_VERIFIED + 10) {
        let mut digest = [0u8; 32];
        digest[..8].copy_from_slice(&(i as u64).to_le_bytes());
        g.remember(
            (0, digest),
            Rc::from(&b"u"[..]),
            now,
            now + Duration::from_secs(60),
        );
    }
    assert_eq!(g.verified.len(), MAX_VERIFIED);
}

#[test]
fn guesses_from_many_addresses_are_bounded_by_the_threads_check_budget() {
    let (_d, mut g) = guard(&["/"], 3);
    g.budget = CheckBudget::new(5);
    let mut stats = ServerStats::default();
    // Each guess from an address of its own: no address reaches its failure count.
    let mut answers = Vec::new();
    let now = Instant::now();
    for i in 0..8u8 {
        let peer = IpAddr::from([10, 1, 0, i]);
        match check_at(&mut g, peer, "/", Some(&basic("u:wrong")), now, &mut stats) {
            Verdict::Denied(d) => answers.push(d.status()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answers, [401, 401, 401, 401, 401, 429, 429, 429]);
    assert_eq!(
        (stats.auth_failed, stats.auth_limited),
        (5, 3),
        "3 not hashed"
    );
    // The budget refills with time.
    let mut budget = CheckBudget::new(5);
    let t0 = Instant::now();
    assert!((0..5).all(|_| budget.take(t0).is_ok()));
    assert_eq!(budget.take(t0), Err(1), "a token in a fifth of a second");
    assert!(
        budget.take(t0 + Duration::from_millis(250)).is_ok(),
        "a fifth of a second: one more"
    );
    assert!(budget.take(t0 + Duration::from_millis(250)).is_err());
}

#[test]
fn a_full_failure_table_keeps_its_live_counts() {
    let mut limiter = Limiter::new(2, Duration::from_secs(60));
    let now = Instant::now();
    let attacker = IpAddr::from([192, 0, 2, 1]);
    limiter.failed(attacker, now);
    limiter.failed(attacker, now);
    for i in 0..MAX_TRACKED as u32 {
        limiter.failed(IpAddr::from((0x0a00_0000u32 + i).to_be_bytes()), now);
    }
    // The oldest live count was not dropped to make room: the attacker stays limited.
    assert!(limiter.limited(attacker, now).is_some());
    assert!(limiter.counts.len() <= MAX_TRACKED);
}

#[test]
fn the_check_budget_counts_the_time_checks_take() {
    let mut budget = CheckBudget::new(50);
    let t0 = Instant::now();
    assert!(budget.take(t0).is_ok());
    // One check that took two seconds (a slow hash on a busy thread): the next waits until
    // the thread's share of time has paid it back, whatever the count allows.
    budget.spent(Duration::from_secs(2));
    let owed = (2.0 - HASHING_BURST) / HASHING_SHARE;
    let at = |secs: f64| t0 + Duration::from_secs_f64(secs);
    // The refusal says the real wait, rounded up: 7.5 s owed, 1 s of it passed.
    assert_eq!(budget.take(at(1.0)), Err((owed - 1.0).ceil() as u64));
    assert_eq!(budget.take(at(owed - 0.5)), Err(1));
    assert!(budget.take(at(owed + 0.5)).is_ok());
    // Quick checks go on at the count's rate.
    budget.spent(Duration::from_millis(2));
    assert!(budget.take(at(owed + 0.6)).is_ok());
}

/// `check` pays the budget what each hash took: with hashing time for one check left, a
/// wrong password is hashed (401) and the next guess at the same instant is refused unhashed
/// (429 with a Retry-After of at least a second), though the count has tokens left.
#[test]
fn a_check_pays_the_budget_the_time_its_hash_took() {
    let (_d, mut g) = guard(&["/"], 100);
    g.budget = CheckBudget::new(50);
    g.budget.hashing = 1e-9;
    let mut stats = ServerStats::default();
    let now = Instant::now();
    let mut guess = |i: u8| {
        let peer = IpAddr::from([10, 2, 0, i]);
        match check_at(&mut g, peer, "/", Some(&basic("u:wrong")), now, &mut stats) {
            Verdict::Denied(d) => d,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(guess(1).status(), 401);
    match guess(2) {
        Denial::Limited(secs) => assert!(secs >= 1, "{secs}"),
        other => panic!("{other:?}"),
    }
    assert_eq!((stats.auth_failed, stats.auth_limited), (1, 1));
}

/// Two threads share one server: a credential one verified goes in on the other with no hash,
/// even once its address is limited (the threads' failure counts are shared, so the second
/// thread's own cache, which never saw it, would otherwise answer 429).
#[test]
fn a_credential_verified_on_one_thread_goes_in_on_the_others_even_when_limited() {
    let (_d, mut first) = guard(&["/"], 2);
    let mut second = Guard::new(first.shared.clone());
    let mut stats = ServerStats::default();
    let good = basic("u:p");
    assert!(matches!(
        check(&mut first, "/", Some(&good), &mut stats),
        Verdict::Allowed(_)
    ));
    for _ in 0..2 {
        let v = check(&mut first, "/", Some(&basic("u:wrong")), &mut stats);
        assert!(matches!(v, Verdict::Denied(Denial::Challenge(_))));
    }
    let v = check(&mut second, "/", Some(&basic("w:p")), &mut stats);
    assert!(matches!(v, Verdict::Denied(Denial::Limited(_))), "{v:?}");
    match check(&mut second, "/", Some(&good), &mut stats) {
        Verdict::Allowed(user) => assert_eq!(&user[..], b"u"),
        other => panic!("{other:?}"),
    }
    // Taken from the first thread's verification, then from the second's own cache.
    assert!(matches!(
        check(&mut second, "/", Some(&good), &mut stats),
        Verdict::Allowed(_)
    ));
    assert_eq!((stats.auth_ok, stats.auth_cached), (3, 2));
    assert_eq!((stats.auth_failed, stats.auth_limited), (2, 1));
}

/// A check counts as a failure from its start, not its end: with `auth_max_failures` checks
/// begun on as many threads and none finished, the next is refused, so however the threads
/// interleave no more than that many hashes are checked for one address in a window. A check
/// that finds the credentials right takes its count back.
#[test]
fn checks_under_way_count_against_the_limit_exactly() {
    let mut limiter = Limiter::new(3, Duration::from_secs(60));
    let (peer, now) = (IpAddr::from([10, 3, 0, 1]), Instant::now());
    for _ in 0..3 {
        assert_eq!(limiter.begin(peer, now), Ok(()));
    }
    assert!(limiter.begin(peer, now).is_err(), "a fourth check began");
    limiter.passed(peer, now);
    assert_eq!(
        limiter.begin(peer, now),
        Ok(()),
        "a right one took its count back"
    );
    assert!(limiter.begin(peer, now).is_err());
}

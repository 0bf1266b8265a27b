use super::*;
use crate::app::check::{ExpectSpec, Length, Statuses};
use crate::app::data::{DataRows, Pick};
use crate::app::extract::SourceSpec;
use crate::app::plan::{Entry, FileSpec, Plan, PlanWire, SessionOptions};
use crate::config::TlsVersion;
use crate::hosts::strict::{decode, Rejected, Versions};
use crate::workload::{Page, RequestSpec};
use serde_json::Value;
use std::collections::BTreeMap;

/// Orders with every option set to something other than its default, at every depth.
// The TLS options are built with `..` so that one added later fails the tests below by name
// instead of failing to compile.
#[allow(clippy::needless_update)]
pub(crate) fn full_orders() -> ToWorker {
    ToWorker::Orders(Box::new(Orders {
        protocol: PROTOCOL_VERSION,
        flint_version: FLINT_VERSION.to_owned(),
        host: "web1".into(),
        url: "https://user:***@web:8443/".into(),
        connect_to: "web:8443".into(),
        host_header: "web:8443".into(),
        scheme: Scheme::Https,
        server_name: "web.example".into(),
        authorization: Some("Basic dXNlcjpwdw==".into()),
        tls: TlsOptions {
            cacert: Some("/etc/ca.pem".into()),
            insecure: true,
            resume: true,
            version: Some(TlsVersion::Tls13),
            ciphers: Some(vec!["TLS13_CHACHA20_POLY1305_SHA256".into()]),
        },
        first_child: 3,
        end_child: 7,
        run: RunOrders {
            concurrency: 12,
            threads: Some(2),
            duration_us: Some(5_000_000),
            pages: Some(900),
            warmup_us: 1_000_000,
            think_us: Some(10_000),
            rate: Some(250.5),
            http: HttpMode::Http2,
            connections_per_child: 1, // more is refused with HTTP/2
            streams: Some(10),
            h2_window: Some(1 << 20),
            connect_timeout_us: 2_000_000,
            response_timeout_us: 3_000_000,
            busy_poll_us: 70,
            read_slack: 0.02,
            seed: 42,
            expect_status: Some("200,3xx".parse().unwrap()),
            redirect: 5,
            fail_fast: true,
            early_data: true,
            log: Some("run.web1.csv".into()),
        },
        workload: Workload {
            pages: vec![Page {
                name: "home".into(),
                weight: 2.5,
                files: vec![0, 1],
            }],
            urls: vec!["/".into(), "/logo.png".into()],
            requests: vec![RequestSpec {
                method: Some("POST".into()),
                headers: vec![("X-Run".into(), "1".into())],
                body: Some(b"a=1".to_vec()),
            }],
            app: crate::workload::AppPlan(Some(std::sync::Arc::new(full_plan()))),
        },
    }))
}

/// An application plan with every field of what it is compiled from set, for a workload of two
/// URLs on one page.
fn full_plan() -> Plan {
    let spec = |path: &str| FileSpec {
        path: path.into(),
        headers: vec![("X-User".into(), "{{users.name}}".into())],
        body: Some("user={{users.name}}&t={{token}}".into()),
        expect: Some(ExpectSpec {
            status: Some(Statuses::Any(vec![200, 303])),
            header_present: vec!["X-Id".into()],
            header_equals: BTreeMap::from([("X-User".to_owned(), "{{users.name}}".to_owned())]),
            content_type: Some("text/html".into()),
            body_contains: Some("Hello".into()),
            body_regex: Some("H[a-z]+".into()),
            json: Some("/id".into()),
            json_equals: BTreeMap::from([("/id".to_owned(), Value::from(7))]),
            body_length: Some(Length::Range {
                min: Some(1),
                max: Some(4096),
            }),
        }),
        extract: BTreeMap::from([("token".to_owned(), SourceSpec::Header("X-Token".into()))]),
        auth: Some("{{users.name}}:{{users.pass}}".into()),
    };
    let wire = PlanWire {
        data: vec![DataRows {
            name: "users".into(),
            file: "users.csv".into(),
            columns: vec!["name".into(), "pass".into()].into(),
            rows: vec![vec!["ann".into(), "pa".into()]].into(),
            pick: Pick::Unique,
        }],
        pages: vec![vec![
            Entry {
                url: 0,
                spec: spec("/"),
            },
            Entry {
                url: 1,
                spec: spec("/logo.png"),
            },
        ]]
        .into(),
        urls: 2,
        options: SessionOptions {
            cookies: false,
            reset_per_page: true,
        },
    };
    Plan::from_wire(wire).unwrap()
}

/// A change to a message's JSON, and the field it concerns.
type Edit = (&'static str, fn(&mut Value));

pub(crate) fn line_of<T: Serialize>(msg: &T) -> Value {
    serde_json::to_value(msg).unwrap()
}

/// `msg` with `edit` applied to its JSON, as a line.
pub(crate) fn edited(msg: Value, edit: impl FnOnce(&mut Value)) -> String {
    let mut msg = msg;
    edit(&mut msg);
    serde_json::to_string(&msg).unwrap()
}

fn why<T: serde::de::DeserializeOwned + Serialize + std::fmt::Debug>(line: &str) -> String {
    match decode::<T>(line) {
        Err(Rejected::Refused { why, .. }) => why,
        other => panic!("{line} was not refused: {other:?}"),
    }
}

/// Every field's path (`run.redirect`, `workload.pages[].files`), arrays as `[]`.
fn paths(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let p = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                out.push(p.clone());
                paths(v, &p, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| paths(v, &format!("{at}[]"), out)),
        _ => {}
    }
}

#[test]
fn messages_are_one_line_of_json_tagged_by_type() {
    let mut out = Vec::new();
    send(&mut out, &ToWorker::Ping { seq: 3 }).unwrap();
    send(&mut out, &ToCoordinator::Heartbeat).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "{\"type\":\"ping\",\"seq\":3}\n{\"type\":\"heartbeat\"}\n"
    );
    let back: ToWorker = decode(text.lines().next().unwrap()).unwrap();
    assert_eq!(back, ToWorker::Ping { seq: 3 });
}

#[test]
fn full_orders_come_back_whole_through_the_strict_reader() {
    let orders = full_orders();
    let line = String::from_utf8(encode(&orders).unwrap()).unwrap();
    assert!(
        !line.contains("null"),
        "an option of the full orders is unset, so the round trip would not cover it: {line}"
    );
    assert_eq!(decode::<ToWorker>(line.trim_end()).unwrap(), orders);
}

/// The orders' fields at this protocol version. When this fails, the orders changed: a worker
/// of the previous build would refuse them or, for a change of meaning, run something else.
/// Bump PROTOCOL_VERSION, set every new option in `full_orders`, and write the new list here.
#[test]
fn the_orders_fields_are_those_of_this_protocol_version() {
    let pinned = "type protocol flint_version host url connect_to host_header scheme \
        server_name authorization tls tls.cacert tls.insecure tls.resume tls.version tls.ciphers \
        first_child end_child run run.concurrency run.threads run.duration_us run.pages \
        run.warmup_us run.think_us run.rate run.http run.connections_per_child run.streams run.h2_window \
        run.connect_timeout_us run.response_timeout_us run.busy_poll_us run.read_slack run.seed \
        run.expect_status run.redirect run.fail_fast run.early_data run.log workload workload.pages workload.pages[].name \
        workload.pages[].weight workload.pages[].files workload.urls workload.requests \
        workload.requests[].method workload.requests[].headers workload.requests[].body \
        workload.app workload.app.data workload.app.data[].columns workload.app.data[].file \
        workload.app.data[].name workload.app.data[].pick workload.app.data[].rows \
        workload.app.options workload.app.options.cookies workload.app.options.reset_per_page \
        workload.app.pages workload.app.pages[][].url workload.app.pages[][].spec \
        workload.app.pages[][].spec.path workload.app.pages[][].spec.headers \
        workload.app.pages[][].spec.body workload.app.pages[][].spec.auth \
        workload.app.pages[][].spec.expect workload.app.pages[][].spec.expect.status \
        workload.app.pages[][].spec.expect.header_present \
        workload.app.pages[][].spec.expect.header_equals \
        workload.app.pages[][].spec.expect.header_equals.X-User \
        workload.app.pages[][].spec.expect.content_type \
        workload.app.pages[][].spec.expect.body_contains \
        workload.app.pages[][].spec.expect.body_regex workload.app.pages[][].spec.expect.json \
        workload.app.pages[][].spec.expect.json_equals \
        workload.app.pages[][].spec.expect.json_equals./id \
        workload.app.pages[][].spec.expect.body_length \
        workload.app.pages[][].spec.expect.body_length.min \
        workload.app.pages[][].spec.expect.body_length.max \
        workload.app.pages[][].spec.extract workload.app.pages[][].spec.extract.token \
        workload.app.pages[][].spec.extract.token.header workload.app.urls";
    let mut got = Vec::new();
    paths(&line_of(&full_orders()), "", &mut got);
    got.sort();
    got.dedup();
    let mut want: Vec<String> = pinned.split_whitespace().map(String::from).collect();
    want.sort();
    assert_eq!(
        (PROTOCOL_VERSION, got),
        (9, want),
        "the orders changed: bump PROTOCOL_VERSION (hosts/protocol.rs says when) and pin them anew"
    );
}

#[test]
fn a_field_this_build_does_not_know_is_refused_by_name_at_any_depth() {
    let cases: [Edit; 5] = [
        ("newer_option", |v| v["newer_option"] = 1.into()),
        ("run.newer_option", |v| v["run"]["newer_option"] = 5.into()),
        ("tls.newer_option", |v| {
            v["tls"]["newer_option"] = "x".into()
        }),
        ("workload.pages[0].newer_option", |v| {
            v["workload"]["pages"][0]["newer_option"] = 1.into()
        }),
        ("workload.requests[0].newer_option", |v| {
            v["workload"]["requests"][0]["newer_option"] = Value::Array(vec![])
        }),
    ];
    for (field, edit) in cases {
        let line = edited(line_of(&full_orders()), edit);
        assert_eq!(why::<ToWorker>(&line), format!("unknown field `{field}`"));
    }
    // Every message, a unit one too, in either direction.
    let ping = edited(line_of(&ToWorker::Ping { seq: 1 }), |v| {
        v["newer_option"] = 1.into()
    });
    assert_eq!(why::<ToWorker>(&ping), "unknown field `newer_option`");
    let stop = edited(line_of(&ToWorker::Stop), |v| v["newer_option"] = 1.into());
    assert_eq!(why::<ToWorker>(&stop), "unknown field `newer_option`");
    let ready = ToCoordinator::Ready { threads: 2, pid: 9 };
    let ready = edited(line_of(&ready), |v| v["newer_option"] = 4.into());
    assert_eq!(why::<ToCoordinator>(&ready), "unknown field `newer_option`");
    let beat = edited(line_of(&ToCoordinator::Heartbeat), |v| {
        v["newer_option"] = 1.into()
    });
    assert_eq!(why::<ToCoordinator>(&beat), "unknown field `newer_option`");
}

#[test]
fn a_result_with_a_statistic_too_many_or_too_few_is_refused() {
    let workload = Workload::from_pages([("p".to_owned(), 1.0, vec!["/"])]).unwrap();
    let result = ToCoordinator::Result(Box::new(WorkerResult {
        stats: Stats::new(&workload, false),
        window_us: 1,
        interrupted: false,
        start_skew_us: Some(2),
        cpu_us: 3,
    }));
    let line = String::from_utf8(encode(&result).unwrap()).unwrap();
    assert_eq!(decode::<ToCoordinator>(line.trim_end()).unwrap(), result);
    let line = edited(line_of(&result), |v| v["stats"]["newer_counter"] = 1.into());
    assert_eq!(
        why::<ToCoordinator>(&line),
        "unknown field `stats.newer_counter`"
    );
    // The statistics' own defaults (for counters an older worker did not send) are not applied.
    let line = edited(line_of(&result), |v| {
        drop(v["stats"].as_object_mut().unwrap().remove("redirects"))
    });
    assert_eq!(
        why::<ToCoordinator>(&line),
        "missing field `stats.redirects`"
    );
}

#[test]
fn a_field_this_build_needs_and_did_not_get_is_refused_not_defaulted() {
    // An `Option` or a field of a type defined elsewhere would be filled in by serde alone.
    let cases: [Edit; 4] = [
        ("run.streams", |v| {
            drop(v["run"].as_object_mut().unwrap().remove("streams"))
        }),
        ("tls.version", |v| {
            drop(v["tls"].as_object_mut().unwrap().remove("version"))
        }),
        ("workload.requests[0].method", |v| {
            drop(
                v["workload"]["requests"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("method"),
            )
        }),
        ("authorization", |v| {
            drop(v.as_object_mut().unwrap().remove("authorization"))
        }),
    ];
    for (field, edit) in cases {
        let line = edited(line_of(&full_orders()), edit);
        assert_eq!(why::<ToWorker>(&line), format!("missing field `{field}`"));
    }
    // A field with no default at all: serde's own refusal names it.
    let line = edited(line_of(&full_orders()), |v| {
        drop(v["run"].as_object_mut().unwrap().remove("redirect"))
    });
    assert!(why::<ToWorker>(&line).contains("`redirect`"), "{line}");
}

#[test]
fn a_refused_hello_or_orders_still_gives_its_versions() {
    let hello = r#"{"type":"hello","protocol":3,"flint_version":"9.9.9","newer_option":8}"#;
    match decode::<ToCoordinator>(hello) {
        Err(Rejected::Refused { kind, why, peer }) => {
            assert_eq!(kind, "hello");
            assert_eq!(why, "unknown field `newer_option`");
            let want = Versions {
                protocol: 3,
                flint_version: "9.9.9".into(),
            };
            assert_eq!(peer, Some(want));
        }
        other => panic!("{other:?}"),
    }
    let orders = edited(line_of(&full_orders()), |v| v["run"]["x"] = 1.into());
    match decode::<ToWorker>(&orders) {
        Err(Rejected::Refused { kind, peer, .. }) => {
            assert_eq!(kind, "orders");
            assert_eq!(peer.unwrap().flint_version, FLINT_VERSION);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        decode::<ToWorker>("SSH-2.0-OpenSSH"),
        Err(Rejected::NotJson(_))
    ));
}

/// The rows a workload's plan draws (as many draws as each set has rows), set by set, as
/// their first column's values.
fn drawn(w: &Workload) -> Vec<Vec<String>> {
    let mut rng = fastrand::Rng::with_seed(1);
    let plan = w.plan().unwrap();
    (plan.data.iter())
        .map(|d| {
            (0..d.len())
                .filter_map(|_| d.draw(&mut rng))
                .map(|row| d.field(row, 0).to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn each_worker_gets_its_own_rows_in_proportion_to_its_webchildren_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("users.csv"), "id\n1\n2\n3\n4\n5\n6\n7\n8\n").unwrap();
    std::fs::write(dir.path().join("pages.csv"), "p\na\nb\nc\nd\n").unwrap();
    let text = r#"
[data.users]
file = "users.csv"
pick = "unique"
[data.pages]
file = "pages.csv"
[[page]]
weight = 1
files = [{ path = "/u?id={{users.id}}&p={{pages.p}}", expect = { status = 200 } }]
"#;
    let workload = Workload::parse_in(text, "w.toml", dir.path()).unwrap();
    fn wire(w: &Workload) -> PlanWire<'_> {
        w.plan().unwrap().to_wire(&[1], 0)
    }
    // Host 0 runs three Webchildren, host 1 one.
    let webchildren = [3, 1];
    let (mut pages, mut users) = (Vec::new(), Vec::new());
    for host in 0..2 {
        let sent = workload.for_host(&webchildren, host).unwrap();
        let line = serde_json::to_string(&sent).unwrap();
        let back: Workload = decode(&line).unwrap();
        assert_eq!(back, workload, "the same plan, compiled again");
        assert_eq!(
            wire(&back),
            wire(&sent),
            "the same entries and rows, compiled again"
        );
        // The sets by name: `pages`, then `users`.
        let rows = drawn(&back);
        pages.push(rows[0].clone());
        users.push(rows[1].clone());
    }
    assert_eq!(
        pages,
        [vec!["a", "b", "c"], vec!["d"]],
        "a cycled set is split too"
    );
    assert_eq!(users, [vec!["1", "2", "3", "4", "5", "6"], vec!["7", "8"]]);
    // A plan the worker cannot compile is refused, naming why.
    let line = serde_json::to_string(&workload).unwrap();
    let line = line.replace("users.id", "users.email");
    match decode::<Workload>(&line) {
        Err(Rejected::Refused { why, .. }) => assert!(why.contains("\"email\""), "{why}"),
        other => panic!("{other:?}"),
    }
}

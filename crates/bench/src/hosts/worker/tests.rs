use super::*;
use crate::hosts::protocol::tests::{edited, full_orders, line_of};
use std::io::Cursor;

/// What the worker wrote, shared with the test.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl Write for Written {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serves `orders` (one line, then the end of input): the error and the reason the worker
/// sent in its `failed` message.
fn refusal_of(orders: String) -> (WorkerError, String) {
    let written = Written::default();
    let input = Box::new(Cursor::new(format!("{orders}\n").into_bytes()));
    let err = serve(input, Box::new(written.clone())).expect_err("the orders were run");
    let text = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
    let mut lines = text
        .lines()
        .map(|l| strict::decode::<ToCoordinator>(l).unwrap());
    assert!(
        matches!(lines.next(), Some(ToCoordinator::Hello { .. })),
        "{text}"
    );
    match lines.next() {
        Some(ToCoordinator::Failed { reason }) => (err, reason),
        other => panic!("no failed message: {other:?} in {text}"),
    }
}

/// The full orders as a coordinator of flint `version` speaking `protocol` would send them.
fn orders_from(version: &str, protocol: u32) -> serde_json::Value {
    let mut orders = line_of(&full_orders());
    orders["flint_version"] = version.into();
    orders["protocol"] = protocol.into();
    orders
}

#[test]
fn orders_with_a_field_this_worker_does_not_know_are_refused_naming_it_and_both_versions() {
    let orders = edited(orders_from("9.9.9", PROTOCOL_VERSION), |v| {
        v["run"]["newer_option"] = 5.into()
    });
    let (err, reason) = refusal_of(orders);
    assert!(
        matches!(&err, WorkerError::Refused(r) if *r == reason),
        "{err}"
    );
    assert!(
        reason.contains("unknown field `run.newer_option`"),
        "{reason}"
    );
    assert!(reason.contains("the coordinator (flint 9.9.9)"), "{reason}");
    assert!(
        reason.contains(&format!("this worker is flint {FLINT_VERSION}")),
        "{reason}"
    );
}

#[test]
fn orders_lacking_a_field_this_worker_needs_are_refused_naming_it() {
    let orders = edited(orders_from("9.9.9", PROTOCOL_VERSION), |v| {
        v["run"].as_object_mut().unwrap().remove("h2_window");
    });
    let (_, reason) = refusal_of(orders);
    assert!(reason.contains("missing field `run.h2_window`"), "{reason}");
    assert!(reason.contains("flint 9.9.9"), "{reason}");
}

#[test]
fn orders_of_another_protocol_version_are_refused_naming_both_versions() {
    // A newer coordinator: its fields differ too, but the version says more.
    let newer = edited(orders_from("9.9.9", PROTOCOL_VERSION + 1), |v| {
        v["tls"]["newer_option"] = "x".into()
    });
    // A coordinator of version 1 sent none of the fields added since.
    let older = edited(orders_from("0.0.1", 1), |v| {
        v["run"].as_object_mut().unwrap().remove("redirect");
    });
    for (orders, peer) in [
        (newer, format!("{} (flint 9.9.9)", PROTOCOL_VERSION + 1)),
        (older, "1 (flint 0.0.1)".into()),
    ] {
        let (_, reason) = refusal_of(orders);
        let want = format!(
            "protocol version {peer} refused: this worker speaks version {PROTOCOL_VERSION} \
             (flint {FLINT_VERSION})"
        );
        assert_eq!(reason, want);
    }
}

#[test]
fn a_tls_configuration_that_cannot_be_built_is_refused_before_ready() {
    // The TLS configuration is built before READY (as the CA bundle is), not after GO: a CA
    // file that cannot be read is this host's reason before anything starts.
    let orders = edited(line_of(&full_orders()), |v| {
        v["connect_to"] = "127.0.0.1:9".into();
        v["tls"]["cacert"] = "/nonexistent/flint-test-ca.pem".into();
        v["tls"]["insecure"] = false.into();
        v["run"]["log"] = serde_json::Value::Null;
        // The full orders' HTTP/2 sends nothing in 0-RTT: the option would be refused first.
        v["run"]["early_data"] = false.into();
    });
    let (err, reason) = refusal_of(orders);
    assert!(matches!(err, WorkerError::Refused(_)), "{err}");
    assert!(reason.contains("flint-test-ca.pem"), "{reason}");
}

#[test]
fn orders_whose_plan_has_fewer_pages_than_their_workload_are_refused_with_a_line() {
    let orders = edited(orders_from(FLINT_VERSION, PROTOCOL_VERSION), |v| {
        let pages = v["workload"]["pages"].as_array_mut().unwrap();
        let mut second = pages[0].clone();
        second["name"] = "second".into();
        pages.push(second);
    });
    let (err, reason) = refusal_of(orders);
    assert!(
        matches!(&err, WorkerError::Refused(r) if *r == reason),
        "{err}"
    );
    assert_eq!(
        reason,
        "the application plan has 1 page and 2 URLs where the workload has 2 pages and 2 URLs"
    );
}

//! What ran where: the machine a result was measured on, as the WebSTONE paper asks every result
//! to disclose (its section 5: hardware, operating system, configuration).
//!
//! Read from `/proc`, `/sys` and `/etc/os-release` (Linux) once per process and cached: a bench,
//! a compare and a lab result call [`environment`] for each JSON they write, and the machine does
//! not change under them. Anything that cannot be read is `null`, never an error: a result is
//! worth more than its description.

use results::Environment;
use std::sync::OnceLock;

/// `{hostname, os, kernel, cpu_model, cores, memory_bytes}` of this machine; each `null` when
/// unknown. `cores` counts the logical CPUs online (hyper-threads included), not those this
/// process may use. Cheap: read once, then cloned.
pub fn environment() -> Environment {
    static CACHE: OnceLock<Environment> = OnceLock::new();
    CACHE.get_or_init(read).clone()
}

fn read() -> Environment {
    let file = |path: &str| std::fs::read_to_string(path).ok();
    let line = |path: &str| {
        file(path)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let os = file("/etc/os-release")
        .or_else(|| file("/usr/lib/os-release"))
        .and_then(|t| os_release_pretty_name(&t));
    let cores = line("/sys/devices/system/cpu/online")
        .and_then(|t| cpu_list_len(&t))
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()));
    Environment {
        hostname: line("/proc/sys/kernel/hostname"),
        os,
        kernel: line("/proc/sys/kernel/osrelease"),
        cpu_model: file("/proc/cpuinfo").and_then(|t| cpu_model(&t)),
        cores: cores.map(|n| n as u64),
        memory_bytes: file("/proc/meminfo").and_then(|t| mem_total_bytes(&t)),
    }
}

/// `PRETTY_NAME` of an os-release file, unquoted (`Debian GNU/Linux 13 (trixie)`).
pub(crate) fn os_release_pretty_name(text: &str) -> Option<String> {
    let value = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("PRETTY_NAME="))?
        .trim();
    let unquoted = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value);
    (!unquoted.is_empty()).then(|| unquoted.replace("\\\"", "\""))
}

/// The CPU's name from /proc/cpuinfo: `model name` on x86, `Hardware`/`Processor`/`cpu
/// model`/`cpu` on other architectures' kernels, in that order of preference.
pub(crate) fn cpu_model(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| v.trim().to_owned())
        })
    };
    ["model name", "Hardware", "Processor", "cpu model", "cpu"]
        .into_iter()
        .find_map(field)
}

/// `MemTotal` of /proc/meminfo in bytes (the file says kB, meaning KiB).
pub(crate) fn mem_total_bytes(text: &str) -> Option<u64> {
    let rest = text.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

/// How many CPUs a kernel CPU list names (`0-3,6,8-9` is 7).
pub(crate) fn cpu_list_len(text: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => part.parse::<usize>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_name_is_read_unquoted() {
        let text =
            "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\n";
        assert_eq!(
            os_release_pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 13 (trixie)")
        );
        assert_eq!(
            os_release_pretty_name("PRETTY_NAME=Alpine\n").as_deref(),
            Some("Alpine")
        );
        assert_eq!(os_release_pretty_name("NAME=x\n"), None);
        assert_eq!(os_release_pretty_name("PRETTY_NAME=\"\"\n"), None);
    }

    #[test]
    fn cpu_model_prefers_model_name_and_falls_back_per_architecture() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t\t: fpu\n";
        assert_eq!(
            cpu_model(x86).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        let arm = "processor\t: 0\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\n";
        assert_eq!(cpu_model(arm).as_deref(), Some("BCM2835"));
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t:\n"), None);
    }

    #[test]
    fn mem_total_is_kib_times_1024() {
        let text = "MemTotal:        8039784 kB\nMemFree:          123 kB\n";
        assert_eq!(mem_total_bytes(text), Some(8_039_784 * 1024));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn cpu_lists_count_ranges_and_singles() {
        assert_eq!(cpu_list_len("0-3,6,8-9\n"), Some(7));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len(""), None);
        assert_eq!(cpu_list_len("3-1"), None);
        assert_eq!(cpu_list_len("x"), None);
    }

    #[test]
    fn environment_of_this_machine_has_every_key_and_is_cached() {
        let e = environment();
        let v = serde_json::to_value(&e).unwrap();
        for k in [
            "hostname",
            "os",
            "kernel",
            "cpu_model",
            "cores",
            "memory_bytes",
        ] {
            assert!(v.get(k).is_some(), "{k} missing from {v}");
        }
        // The test machines are Linux: the kernel's own files are there.
        assert!(e.kernel.is_some(), "{e:?}");
        assert!(e.cores.is_some_and(|n| n >= 1), "{e:?}");
        assert!(e.memory_bytes.is_some_and(|n| n > 0), "{e:?}");
        assert_eq!(environment(), e);
    }
}

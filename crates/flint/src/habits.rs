//! Flags that users of h2load, oha, hey, wrk, wrk2 and curl type out of habit, in one table.
//!
//! Each is either taken as the flint flags it means (replaced before clap reads the line), or,
//! when clap refuses the line, answered by one line naming flint's equivalent (exit 2). clap's
//! own answer would be wrong for them: a generic "use `-- -z`" tip (which then fails as a path)
//! or a flag of similar spelling and other meaning (`--host` for `--hosts`, `--data` for
//! `--duration`). Only the load commands (`bench`, `run`, `compare`) read the table: their
//! flags are the ones these tools share.

use std::ffi::OsString;

/// What flint makes of another tool's flag.
enum Answer {
    /// The same thing in flint's words: the flag is replaced by these before parsing.
    Means(&'static [&'static str]),
    /// Refused with this line, `{v}` replaced by the value given.
    Refuse(&'static str),
}

struct Habit {
    /// As the other tool writes it: `-z`, `--data`.
    flag: &'static str,
    /// It takes a value (`-R 100`, `-R100`, `--data=a=b`).
    takes_value: bool,
    /// Whether the habit is what was typed, given the value: flint's own `-m` and `-d` take
    /// other values (a method, a duration) and are left to clap then.
    applies: fn(&str) -> bool,
    answer: Answer,
}

fn always(_: &str) -> bool {
    true
}

/// h2load's `-m 100` is a number; a method has a letter in it.
fn not_a_method(value: &str) -> bool {
    !value.is_empty() && !value.chars().any(|c| c.is_ascii_alphabetic())
}

/// oha's and hey's `-d` is a body: anything not written as a run length (one out of range is
/// clap's to refuse, saying so).
fn not_a_run_length(value: &str) -> bool {
    !value.is_empty() && !crate::duration::is_written_as_run_length(value)
}

const fn means(flag: &'static str, flint: &'static [&'static str]) -> Habit {
    Habit {
        flag,
        takes_value: false,
        applies: always,
        answer: Answer::Means(flint),
    }
}

const fn refuse(flag: &'static str, takes_value: bool, line: &'static str) -> Habit {
    Habit {
        flag,
        takes_value,
        applies: always,
        answer: Answer::Refuse(line),
    }
}

/// The table: add a habit here. (`-z`, `-X` and `--no-tui` are clap aliases of `-d`, `-m` and
/// `--quiet`, declared with those flags.)
const HABITS: &[Habit] = &[
    means("--http2", &["--http", "2"]),
    means("-h2", &["--http", "2"]),
    // curl's: HTTP/2 without an upgrade over http://, what flint's `--http 2` speaks there.
    means("--http2-prior-knowledge", &["--http", "2"]),
    means("--h1", &["--http", "1.1"]),
    // wrk's: print the latency distribution, which flint's summary always does.
    means("--latency", &[]),
    Habit {
        flag: "-m",
        takes_value: true,
        applies: not_a_method,
        answer: Answer::Refuse(
            "-m {v}: h2load's streams per connection are --http 2 --streams {v} here; flint's \
             -m is the request method, as in curl, hey and oha",
        ),
    },
    Habit {
        flag: "-d",
        takes_value: true,
        applies: not_a_run_length,
        answer: Answer::Refuse(
            "-d {v}: flint's -d is the run's length (30s, 2m; wrk's -d); a request body (oha's \
             and hey's -d) is --body '{v}', a body file (h2load's -d) --body-file FILE",
        ),
    },
    refuse(
        "-D",
        true,
        "-D {v}: h2load's run length is -d {v} here (a bare number is seconds); hey's and \
         oha's -D, a body file, is --body-file FILE",
    ),
    refuse(
        "-L",
        false,
        "-L: redirects are followed with --redirect N here, at most N a file (oha and hey \
         follow 10: --redirect 10)",
    ),
    refuse(
        "-v",
        false,
        "-v: each request's and response's head is printed with --debug here; the version is -V",
    ),
    refuse(
        "-j",
        false,
        "-j: the result as JSON is --json FILE here, --json - on stdout alone",
    ),
    refuse(
        "-o",
        true,
        "-o {v}: one CSV line per request (hey's -o csv) is --log FILE here; the result as \
         JSON is --json FILE, as a page --html FILE",
    ),
    refuse(
        "-R",
        true,
        "-R {v}: wrk2's rate is --rate {v} here (pages per second, open loop; a page is one \
         request unless a workload says more)",
    ),
    refuse(
        "--disable-keepalive",
        false,
        "--disable-keepalive: --http 1.0 opens a new connection for every file",
    ),
    refuse(
        "-disable-keepalive",
        false,
        "-disable-keepalive: --http 1.0 opens a new connection for every file",
    ),
    refuse(
        "--data",
        true,
        "--data {v}: curl's form post is -m POST --body '{v}' -H 'Content-Type: \
         application/x-www-form-urlencoded' here (--body-file FILE for a file's content)",
    ),
    refuse(
        "--host",
        true,
        "--host {v}: the Host header is -H 'Host: {v}' here, or --connect-to HOST:PORT to keep \
         the URL's host and connect elsewhere (--hosts names client hosts to run the load from)",
    ),
    refuse(
        "-host",
        true,
        "-host {v}: the Host header is -H 'Host: {v}' here, or --connect-to HOST:PORT to keep \
         the URL's host and connect elsewhere (--hosts names client hosts to run the load from)",
    ),
];

/// The commands whose flags the table speaks of.
fn reads_the_table(args: &[OsString]) -> bool {
    args.get(1)
        .is_some_and(|c| c == "bench" || c == "run" || c == "compare")
}

/// The line with each flag another tool means the same by replaced by flint's. Nothing after
/// `--` is touched.
pub fn translate(args: Vec<OsString>) -> Vec<OsString> {
    if !reads_the_table(&args) {
        return args;
    }
    let mut out = Vec::with_capacity(args.len());
    let mut literal = false;
    for arg in args {
        literal |= arg == "--";
        let means = HABITS.iter().find_map(|h| match h.answer {
            Answer::Means(flint) if !literal && arg == h.flag => Some(flint),
            _ => None,
        });
        match means {
            Some(flint) => out.extend(flint.iter().map(OsString::from)),
            None => out.push(arg),
        }
    }
    out
}

/// For a line clap refused at `refused` (the argument or value it names, if any): the one line
/// for the first habit in it up to there, if there is one. A habit after the refused argument
/// is not what clap refused (clap reads left to right), and its line would leave the real
/// mistake unsaid.
pub fn explain(args: &[OsString], refused: Option<&str>) -> Option<String> {
    if !reads_the_table(args) {
        return None;
    }
    let args: Vec<String> = args
        .iter()
        .take_while(|a| *a != "--")
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // The refused token, or the value after a refused flag (`-m 4`: clap names the value).
    let last = refused
        .and_then(|r| args.iter().skip(2).position(|a| a == r).map(|i| i + 2))
        .unwrap_or(args.len());
    for (i, arg) in args.iter().enumerate().take(last + 1).skip(2) {
        // The flag as written first: `-disable-keepalive` is hey's flag, not `-d` with a value.
        for exact in [true, false] {
            for habit in HABITS {
                let Answer::Refuse(line) = habit.answer else {
                    continue;
                };
                if exact != (arg == habit.flag) {
                    continue;
                }
                let Some(value) = value_of(habit, arg, args.get(i + 1)) else {
                    continue;
                };
                if (habit.applies)(value) {
                    let value = if value.is_empty() { "VALUE" } else { value };
                    return Some(line.replace("{v}", value));
                }
            }
        }
    }
    None
}

/// Whether clap's answer to the line was its help though no one asked for it: `-host` and `-h2`
/// are read as `-h` and a cluster after it.
pub fn help_not_asked(args: &[OsString]) -> bool {
    !args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "-h" || a == "--help" || a == "help")
}

/// The value `arg` gives `habit` (`""` for a flag without one), or None when `arg` is not it:
/// `-R 100`, `-R100`, `--data=a=b`, `--data a=b`.
fn value_of<'a>(habit: &Habit, arg: &'a str, next: Option<&'a String>) -> Option<&'a str> {
    if arg == habit.flag {
        return match habit.takes_value {
            true => Some(next.map_or("", |v| v.as_str())),
            false => Some(""),
        };
    }
    if !habit.takes_value {
        return None;
    }
    let rest = arg.strip_prefix(habit.flag)?;
    let short = habit.flag.len() == 2 && !habit.flag.starts_with("--");
    match rest.strip_prefix('=') {
        Some(value) if !short => Some(value),
        _ if short && !rest.is_empty() => Some(rest),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn flags_that_mean_the_same_are_translated_outside_values() {
        assert_eq!(
            translate(line(&["flint", "bench", "--http2", "u", "--latency"])),
            line(&["flint", "bench", "--http", "2", "u"])
        );
        assert_eq!(
            translate(line(&["flint", "bench", "u", "--", "--http2"])),
            line(&["flint", "bench", "u", "--", "--http2"])
        );
        // discover and serve have flags of their own.
        assert_eq!(
            translate(line(&["flint", "serve", "--http2"])),
            line(&["flint", "serve", "--http2"])
        );
    }

    #[test]
    fn a_refused_habit_is_found_attached_or_apart_and_only_with_its_values() {
        let says = |args: &[&str]| explain(&line(args), None);
        assert!(says(&["flint", "bench", "u", "-R100"])
            .unwrap()
            .contains("--rate 100"));
        assert!(says(&["flint", "bench", "u", "--data=a=b"])
            .unwrap()
            .contains("--body 'a=b'"));
        assert!(says(&["flint", "bench", "u", "-m", "8"])
            .unwrap()
            .contains("--http 2 --streams 8"));
        assert_eq!(says(&["flint", "bench", "u", "-m", "POST", "--bad"]), None);
        assert_eq!(says(&["flint", "bench", "u", "-d", "2s", "--bad"]), None);
        // A run length out of range is clap's to refuse as out of range, not a body.
        let args = line(&["flint", "bench", "u", "-d", "400000h"]);
        assert_eq!(explain(&args, Some("400000h")), None);
        assert_eq!(says(&["flint", "bench", "u", "--", "-v"]), None);
        assert_eq!(says(&["flint", "discover", "u", "-v"]), None);
        // clap refused `--bogus` first: `-L` after it is not the mistake.
        let args = line(&["flint", "bench", "u", "--bogus", "-L"]);
        assert_eq!(explain(&args, Some("--bogus")), None);
        let args = line(&["flint", "bench", "u", "-L", "--bogus"]);
        assert!(explain(&args, Some("-L")).is_some());
        let args = line(&["flint", "bench", "u", "-m", "4"]);
        assert!(explain(&args, Some("4")).unwrap().contains("--streams 4"));
        // hey's single-dash flags are themselves, not -d or -h with a value.
        let args = line(&["flint", "bench", "u", "-disable-keepalive"]);
        assert!(explain(&args, None)
            .unwrap()
            .starts_with("-disable-keepalive: "));
        assert!(help_not_asked(&line(&[
            "flint", "bench", "u", "-host", "x"
        ])));
        assert!(!help_not_asked(&line(&["flint", "bench", "-h"])));
    }
}

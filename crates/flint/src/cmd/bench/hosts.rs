//! `flint bench --hosts`: the run on many client hosts, its reports and its exit status.

use super::{BenchArgs, ReportArg};
use crate::exit::{self, Status};
use crate::output::{self, Stream};
use anyhow::Context;
use bench::hosts::coordinator::{self, HostsRun};
use bench::hosts::split::{self, HostSpec};
use bench::thresholds::Verdict;
use bench::{BenchConfig, Workload};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

/// The hosts the user named (`--hosts` or `--hosts-file`), or `None` for a run in one process.
pub fn hosts_of(args: &BenchArgs) -> anyhow::Result<Option<Vec<HostSpec>>> {
    named_hosts(
        args.hosts.as_deref(),
        args.hosts_file.as_deref(),
        args.launch.as_deref(),
    )
}

/// `--hosts`, `--hosts-file` and `--launch` (of bench or compare) as a host list.
pub fn named_hosts(
    hosts: Option<&str>,
    hosts_file: Option<&std::path::Path>,
    launch: Option<&str>,
) -> anyhow::Result<Option<Vec<HostSpec>>> {
    if let Some(list) = hosts {
        return Ok(Some(split::parse_list(list)?));
    }
    if let Some(path) = hosts_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        return Ok(Some(split::parse_file(&path.display().to_string(), &text)?));
    }
    if launch.is_some() {
        anyhow::bail!("--launch needs --hosts or --hosts-file");
    }
    Ok(None)
}

/// Runs on `hosts`, prints the reports and the per-host table, writes --json/--html. Exit
/// status 1 when a host was lost (the report then holds the merge of the others).
pub fn bench_on_hosts(
    args: &BenchArgs,
    config: &BenchConfig,
    workload: &Workload,
    hosts: &[HostSpec],
    stop: &AtomicBool,
) -> anyhow::Result<ExitCode> {
    let template = args.launch.as_deref().unwrap_or(split::DEFAULT_TEMPLATE);
    let run = HostsRun {
        config,
        workload,
        hosts,
        template,
        threads: args.load.threads,
        stop,
    };
    let outcome = coordinator::run(&run, &mut std::io::stderr())?;
    let load = &args.load;
    let result = &outcome.result;
    let verdicts: Vec<Verdict> = load.thresholds.iter().map(|t| t.judge(result)).collect();
    let mut text = super::reports(result, load, None);
    if super::report_list(load)
        .iter()
        .any(|r| *r != ReportArg::None)
    {
        text.push('\n');
        text.push_str(&bench::report::hosts_table(&outcome.hosts));
    }
    if !verdicts.is_empty() {
        text.push_str(&super::thresholds_block(&verdicts));
    }
    let stream = Stream::for_reports([
        load.json.as_deref(),
        load.log.as_deref(),
        load.html.as_deref(),
    ]);
    stream.write(&text).context("writing the report")?;
    if load.json.is_some() || load.html.is_some() {
        let mut doc = bench::report::record(result);
        doc.hosts = outcome.hosts;
        doc.incomplete = outcome.incomplete;
        let mut json = serde_json::to_value(&doc)?;
        if let (false, Some(obj)) = (verdicts.is_empty(), json.as_object_mut()) {
            obj.insert("thresholds".into(), serde_json::to_value(&verdicts)?);
        }
        crate::cmd::write_outputs(&json, load.json.as_deref(), load.html.as_deref())
            .map_err(exit::failed)?;
    }
    if outcome.incomplete {
        output::error_line(
            "flint: incomplete: a client host was lost; the report merges the others",
        );
        return Ok(Status::Failed.into());
    }
    let status = super::outcome(result, &verdicts);
    if status == Status::Failed {
        output::error_line(&format!(
            "flint: the run failed: {}",
            super::failure(result, None)
        ));
    }
    Ok(status.into())
}

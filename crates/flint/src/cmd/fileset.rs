//! `flint fileset`: write one of the paper's mixes, or the files a filelist names.

use crate::cli::FilesetArgs;
use std::process::ExitCode;

pub fn fileset(args: FilesetArgs) -> anyhow::Result<ExitCode> {
    if let Some(mix) = args.mix {
        let workload = bench::fileset::write_mix(&args.dir, mix.into())?;
        println!(
            "wrote the {:?} mix to {} (workload: {})",
            mix,
            args.dir.display(),
            workload.display()
        );
    }
    if let Some(filelist) = &args.filelist {
        let files = bench::fileset::write_filelist(&args.dir, filelist)?;
        println!(
            "wrote {} files named by {} to {}",
            files.len(),
            filelist.display(),
            args.dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

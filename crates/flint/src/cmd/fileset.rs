//! `flint fileset`: write one of the paper's mixes, or the files a filelist names.

use clap::ValueEnum;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["mix", "filelist"])))]
pub struct FilesetArgs {
    /// Directory to write (created if missing).
    pub dir: PathBuf,
    /// One of the paper's mixes; also writes DIR/workload.toml.
    #[arg(long, value_enum)]
    pub mix: Option<MixArg>,
    /// Create the files a WebSTONE filelist names, sized by their names (file3k.html: 3 KiB).
    #[arg(long, value_name = "FILE")]
    pub filelist: Option<PathBuf>,
}

/// Which of the paper's four workload mixes (WebSTONE section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MixArg {
    /// Small pages (< 20 KB), mostly text: modem users.
    Modem,
    /// Files of 1 to 100 KB.
    General,
    /// Movies, sounds and large images: 20 KB to megabytes.
    Media,
    /// General and media rich: the paper's own sample filelist.
    Mixed,
}

impl From<MixArg> for bench::fileset::Mix {
    fn from(mix: MixArg) -> Self {
        use bench::fileset::Mix;
        match mix {
            MixArg::Modem => Mix::Modem,
            MixArg::General => Mix::General,
            MixArg::Media => Mix::Media,
            MixArg::Mixed => Mix::Mixed,
        }
    }
}

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

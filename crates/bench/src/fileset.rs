//! Document trees for the paper's four mixes, and files named by a filelist. (Workload helper.)

//! Downloads one file with hf-hub 0.4.3's own downloader (`ApiRepo::download`: ranged chunks,
//! a committed-offset trailer), for `scripts/bench download` to measure beside `draftlab pull`
//! and curl. Reads `HF_ENDPOINT` and `HF_HOME`/`HF_HUB_CACHE` as hf-hub does.
//! Usage: hf_hub_download REPO FILE [CHUNK_BYTES]   (prints the path on stdout)

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !(3..=4).contains(&args.len()) {
        eprintln!("usage: hf_hub_download REPO FILE [CHUNK_BYTES]");
        std::process::exit(2);
    }
    let mut builder = hf_hub::api::tokio::ApiBuilder::from_env().with_progress(false);
    if let Some(chunk) = args.get(3) {
        builder = builder.with_chunk_size(Some(chunk.parse().unwrap_or_else(|_| {
            eprintln!("CHUNK_BYTES: a number");
            std::process::exit(2)
        })));
    }
    let result =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string()).and_then(|rt| {
            let api = builder.build().map_err(|e| e.to_string())?;
            rt.block_on(api.model(args[1].clone()).download(&args[2])).map_err(|e| e.to_string())
        });
    match result {
        Ok(path) => println!("{}", path.display()),
        Err(e) => {
            eprintln!("hf_hub_download: {e}");
            std::process::exit(1);
        }
    }
}

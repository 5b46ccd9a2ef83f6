//! Serves files the way the Hugging Face hub does, on a local port, until killed: for
//! `scripts/bench download` (the real hf-hub client against curl on the same server).
//! Usage: mock_hub REPO FILE PATH   (prints the server's URL on stdout)

use draftlab_core::testing::mock_hub::MockHub;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: mock_hub REPO FILE PATH");
        std::process::exit(2);
    }
    let hub = MockHub::start(vec![(args[1].clone(), args[2].clone(), args[3].clone().into())]);
    println!("{}", hub.url);
    loop {
        std::thread::park();
    }
}

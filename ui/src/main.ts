import { mount } from "svelte";
import App from "./App.svelte";
import { FakeBackend } from "./lib/fake";
import { isTauri, tauriBackend, type Backend } from "./lib/backend";
import "./app.css";

async function start() {
  // In the app: Tauri. In a plain browser (design work, screenshots): the fake backend.
  const backend: Backend = isTauri() ? await tauriBackend() : new FakeBackend({ frameMs: 30 });
  const target = document.getElementById("app");
  if (target) mount(App, { target, props: { backend } });
}

void start();

import { mount } from "svelte";
import App from "./App.svelte";
import Preferences from "./components/Preferences.svelte";
import { isTauri, tauriBackend, type Backend } from "./lib/backend";
import "./app.css";

/// In the app: Tauri. In a plain browser during development (design work, screenshots): the fake
/// backend, loaded only then — production builds leave it out of the bundle.
async function backend(): Promise<Backend | null> {
  if (isTauri()) return tauriBackend();
  if (import.meta.env.DEV) {
    const { FakeBackend } = await import("./lib/fake");
    return new FakeBackend({ frameMs: 30 });
  }
  return null;
}

async function start() {
  const target = document.getElementById("app");
  if (!target) return;
  const b = await backend();
  // The Settings window loads the same page at #settings.
  if (b && location.hash === "#settings") mount(Preferences, { target, props: { backend: b } });
  else if (b) mount(App, { target, props: { backend: b } });
  else target.textContent = "Draftlab's page runs inside the Draftlab app: open Draftlab.app (or scripts/app).";
}

void start();

/** The store under test, set anew for every test (the parts import this, not the index, so no import circle). */
import type { Store } from "../store.ts";

export interface StoreHandle {
  store: Store;
}

import Dispatch

/// The main queue, made once: where the `@MainActor` forms deliver. On Linux `DispatchQueue.main`
/// makes a new wrapper on every call (an allocation per `perform`); on Apple platforms it is one
/// object anyway.
package let mainQueue = DispatchQueue.main

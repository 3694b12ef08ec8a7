// Package fakes holds nothing but the rule its subpackages keep, checked by its test: each fake
// (bitrixfake, habrfake, targetfake, graphfake, enrichfake) is a real HTTP server built from the
// documented behaviour of the system it stands for, and imports none of the project's packages
// outside internal/fakes. A fake built on the client's code (its types, its hash) would agree
// with the client's mistakes, and the tests that use it could not catch a contract bug.
package fakes

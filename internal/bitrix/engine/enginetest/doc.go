// Package enginetest gives the engine's tests a world to run in, as riverqueue/river's rivertest
// does for its users: a fresh migrated database, the fake portal and the fake target over real
// HTTP, the clients the engine talks to them with, the log it writes (checked, when the test
// ends, for the webhook's and the target's tokens) and its metrics.
//
// Its entities are synthetic (Registry): small descriptions in the pattern of
// docs/adding-an-entity.md that read real portal methods the fake serves, one for each kind of
// lister the engine has (an ID-chained scan, offset pages, a child fetched with its parent, a
// walk per key, a child with a listing of its own, one listing per record), with references, a
// self-reference and children. They are not the catalog of internal/bitrix: the engine is
// proven by its own tests, and this package imports no entity.
package enginetest

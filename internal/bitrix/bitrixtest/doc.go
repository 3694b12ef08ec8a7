// Package bitrixtest is the conformance test helper of the Bitrix24 entities, as rivertest is
// River's: one call, Conformance, proves of an entity what every entity must hold, against a
// fake portal (bitrixfake), a fake target (targetfake) and databases of its own (dbtest).
//
// It migrates the entity twice from the same portal: once without interruption into a fresh
// database and target, and once killing the migration (a child process, testdata/crashchild)
// with SIGKILL at random moments of its get and set, rerunning it each time, as cron would
// after a node died (and, for a case with ConfirmKills, inside the get's asks by id of the records
// its pass did not see, before it concludes them deleted). Then it requires that verify ends green
// (or with exactly the problems the Case expects), that the target holds every record once and
// nothing else, that it created and removed as many records as the uninterrupted run's target,
// that one more set sends nothing, and that both worlds end equal: statuses, id maps, inventories
// and the target's records byte for byte, children included.
//
// Any registry can be conformance-tested, as riverdrivertest exercises any driver: a Case names
// the registry its entity is in, and New builds the child that runs that registry's phases
// (CatalogChild runs the catalog's).
//
// The fakes and databases live in the test and outlive the kills. The target gives ids by key
// (targetfake.Options.StableIDs), so the two targets compare byte for byte although the runs
// sent their batches in different orders.
package bitrixtest

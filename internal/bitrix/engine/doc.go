// Package engine migrates the entities of a Bitrix24 portal to a target system through
// Postgres, in the single-pass model of seed 000: fields-get, fields-set, get, set, verify.
//
// The engine knows no entity. Entities are values (Entity) in a Registry that the program gives
// it (internal/bitrix's Catalog for the Bitrix24 migration; there is no default); the phases are
// generic code that loops over them. How an entity is read is one of the listers (IDScan, ID
// ranges walked at once; OffsetPages; PerRecord; ChildFetch, a child read with every page of its
// parent; KeyWalk, cursor-paged listings per key) or a Lister or Walker of the entity's own,
// written against the exported interfaces; what cannot be described (a payload to translate,
// checks only one entity has, how a family of entities names its records in custom fields) is a
// hook of the entity. docs/adding-an-entity.md walks through adding one.
//
// New builds an Engine from a Config (the registry, the database, the portal and target clients,
// the run's limits), refusing one it cannot run with and applying the defaults of the fields left
// zero once; the phases are Phase values, run by name (Engine.Phase, Run) in the order Phases
// lists them, each on the registered *Entity its name resolves to.
//
// get reads the source into bitrix_records with status NEW and keeps its place in the page log
// and the inventory; set imports NEW and due ERROR_RETRY records through the target's import
// API, translating references through bitrix_id_map; verify compares every imported record with
// the target and sets the entity's VERIFIED flag when everything matches. Every phase can be
// interrupted and rerun: get resumes from its ranges and page log, set resends records by their
// idempotency key (the target returns the same id for a key it already has), and a record's
// status changes only through Machine, whose retry schedule, parent/child and ordered picking
// and revival by reason code are the shared state machine's (internal/status). Every walk, ID
// range read and import round keeps up to Concurrency requests in flight through one worker
// pool (pool.go).
//
// Every statement on the bitrix_* tables is a method of Store (store*.go), the entities'
// exported ones and the phases' unexported ones alike; a phase file holds no SQL. A Store runs
// on the pool, or, from NewStore(tx), in a transaction that spans several calls (the writes that
// belong to a caller's transaction refuse a Store not bound to one).
package engine

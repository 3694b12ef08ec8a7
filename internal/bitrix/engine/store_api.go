package engine

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ingest-dev/ingest/internal/status"
)

// Store is the migration's state in Postgres (bitrix_records, bitrix_id_map, the inventory and
// the page log) as an entity's code may use it: an entity's lister, walk or hook asks the store,
// it writes no SQL of its own. A Store is the pool, or one transaction (Tx).
type Store struct {
	db status.DB
	tx pgx.Tx // the transaction, within Tx
}

// NewStore is the store over db: the pool, or a transaction (a pgx.Tx), in which every call of
// the returned Store then runs. It is how code that holds a transaction spanning several calls
// reaches the store: NewStore(tx).logPages(...), NewStore(tx).saveRecords(...).
func NewStore(db status.DB) Store {
	tx, _ := db.(pgx.Tx)
	return Store{db: db, tx: tx}
}

// store is the engine's Store over its pool.
func (e *Engine) store() Store { return NewStore(e.pool) }

// errNoTx is the error of a write that must share a transaction, asked outside Tx.
var errNoTx = errors.New("bitrix store: this write needs a transaction (Store.Tx)")

// Inventory returns the entity's inventory row, creating it when there is none.
func (s Store) Inventory(ctx context.Context, entity string) (Inventory, error) {
	return s.loadInventory(ctx, entity)
}

// StartPass starts a new get pass of the entity, unless one is under way, and returns its row;
// limit is the run's test_limit.
func (s Store) StartPass(ctx context.Context, entity string, limit int) (Inventory, error) {
	return s.startPass(ctx, entity, limit)
}

// SourceIDs returns the source ids of the entity's records, in record order.
func (s Store) SourceIDs(ctx context.Context, entity string) ([]string, error) {
	return s.storedIDs(ctx, entity)
}

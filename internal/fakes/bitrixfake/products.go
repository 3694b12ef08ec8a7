package bitrixfake

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Product rows of deals changed between two runs (mutate.go): added, edited (quantity) and
// deleted through AddProductRow, EditProductRow and DeleteProductRow. The documentation of
// crm.item.productrow.add, .update and .delete says nothing of the deal's own fields moving, so
// the deal's updatedTime and lastActivityTime stay (the conservative reading: a client finds such
// a change only by reading the deal's rows again).

// productChange is what changed among a deal's product rows.
type productChange struct {
	added int          // rows added: ids dealID*100 + firstAddedRow + i
	edits map[int]int  // row id: edits
	gone  map[int]bool // row ids deleted
}

// firstAddedRow and maxProductRows lay out the ids of a deal's product rows: dealID*100 + k, the
// generated ones from 1, the added ones from firstAddedRow.
const (
	firstAddedRow  = 60
	maxProductRows = 100
)

// productRowChanges applies what changed to a deal's generated product rows.
func (p *Portal) productRowChanges(dealID int, rows []object) []object {
	pc := p.mut.products[dealID]
	if pc == nil {
		return rows
	}
	for i := range pc.added {
		id := dealID*100 + firstAddedRow + i
		price := json.RawMessage(fmt.Sprintf("%d.00", 1000+10*i))
		rows = append(rows, object{
			{"id", id}, {"ownerId", dealID}, {"ownerType", "D"}, {"productId", 0},
			{"productName", fmt.Sprintf("Добавленный товар %d", id)}, {"price", price}, {"priceAccount", price},
			{"priceExclusive", price}, {"priceNetto", price}, {"priceBrutto", price}, {"quantity", 1},
			{"discountTypeId", 2}, {"discountRate", 0}, {"discountSum", 0}, {"taxRate", nil}, {"taxIncluded", "N"},
			{"customized", "Y"}, {"measureCode", 796}, {"measureName", "шт"}, {"sort", 1000 + 10*i}, {"xmlId", ""},
			{"type", 4}, {"storeId", nil},
		})
	}
	out := rows[:0:0]
	for _, r := range rows {
		v, _ := r.get("id")
		id, _ := v.(int)
		if pc.gone[id] {
			continue
		}
		if n := pc.edits[id]; n > 0 {
			q, _ := r.get("quantity")
			r = slices.Clone(r)
			r.set("quantity", intval(q)+n)
		}
		out = append(out, r)
	}
	return out
}

// productChangeOf returns the changes of a deal's product rows, made on first use.
func (p *Portal) productChangeOf(dealID int) *productChange {
	pc := p.mut.products[dealID]
	if pc == nil {
		pc = &productChange{edits: map[int]int{}, gone: map[int]bool{}}
		p.mut.products[dealID] = pc
	}
	return pc
}

// AddProductRow adds a product row to a deal and returns its id.
func (p *Portal) AddProductRow(dealID int) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if indexOf(p.deals, dealID) < 0 {
		return 0, fmt.Errorf("bitrixfake: no deal %d to add a product row to", dealID)
	}
	pc := p.productChangeOf(dealID)
	if firstAddedRow+pc.added >= maxProductRows {
		return 0, fmt.Errorf("bitrixfake: deal %d has the most product rows the fake holds", dealID)
	}
	pc.added++
	return dealID*100 + firstAddedRow + pc.added - 1, nil
}

// EditProductRow changes a product row's quantity.
func (p *Portal) EditProductRow(rowID int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.productRowExists(rowID) {
		return fmt.Errorf("bitrixfake: no product row %d to edit", rowID)
	}
	p.productChangeOf(rowID / 100).edits[rowID]++
	return nil
}

// DeleteProductRow deletes a product row.
func (p *Portal) DeleteProductRow(rowID int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.productRowExists(rowID) {
		return fmt.Errorf("bitrixfake: no product row %d to delete", rowID)
	}
	p.productChangeOf(rowID / 100).gone[rowID] = true
	return nil
}

func (p *Portal) productRowExists(rowID int) bool {
	return slices.ContainsFunc(p.productRows(rowID/100), func(r object) bool {
		v, _ := r.get("id")
		return v == rowID
	})
}

// Package bitrix holds the entities of the Bitrix24 migration: one entity_<name>.go file per
// entity or family (users, workgroups, chats, the feed, tasks, the CRM, smart processes,
// workflows), the hooks only they need (the chats' lister and message walk, the payloads of
// feed posts and tasks with their BB-code, the CRM's link rules, the funnels' and smart types'
// listers, the workflows' own verify), and Catalog, the registry of them all in migration
// order that the program hands to engine.Engine.
//
// It uses only the engine's exported API (internal/bitrix/engine): an entity is a description
// the engine loops over, so adding one never touches the engine (docs/adding-an-entity.md).
package bitrix

package bitrix

import "github.com/ingest-dev/ingest/internal/bitrix/engine"

// Catalog returns the registry of every entity this migration knows, in migration order, with
// the entities' options given (their commands' flags, such as ChatRescan). Each call builds a
// new one: there is no global registry to change behind a running engine.
func Catalog(opts ...CatalogOption) *engine.Registry {
	var o catalogOptions
	for _, opt := range opts {
		opt(&o)
	}
	r, err := engine.NewRegistry(usersEntity(), groupsEntity(), groupMembersEntity(), chatsEntity(o), chatMessagesEntity(),
		feedEntity(), feedRecipientsEntity(), feedCommentsEntity(), tasksEntity(), taskChecklistsEntity(), taskCommentsEntity(o),
		crmTypesEntity(), crmCategoriesEntity(), crmStagesEntity(), companiesEntity(), contactsEntity(), dealsEntity(),
		dealProductsEntity(), crmCommentsEntity(), smartEntity(), workflowsEntity(), workflowInstancesEntity(), workflowTasksEntity())
	if err != nil {
		panic("bitrix: the built-in catalog is inconsistent: " + err.Error())
	}
	return r
}

// CatalogOption sets an option of one of Catalog's entities.
type CatalogOption func(*catalogOptions)

// catalogOptions are the entities' options a command may set.
type catalogOptions struct {
	chatRescan bool
}

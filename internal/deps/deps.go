// Package deps pins the design card's dependencies until the code that uses them lands.
// It is deleted once every import below is used by real code.
package deps

import (
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	_ "github.com/PuerkitoBio/goquery"
	_ "github.com/alexflint/go-arg"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/peterldowns/pgtestdb"
	_ "github.com/peterldowns/pgtestdb/migrators/goosemigrator"
	_ "github.com/pressly/goose/v3"
	_ "github.com/pressly/goose/v3/lock"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/push"
	_ "golang.org/x/net/html/charset"
	_ "golang.org/x/time/rate"
	_ "sigs.k8s.io/yaml"
)

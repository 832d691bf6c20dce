module github.com/sponson/apply

go 1.26

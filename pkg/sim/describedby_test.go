package sim

// describedBy is what each provider of the list is checked against, by
// name; providers without a description are left out.
var describedBy = func() map[string]describedAs {
	m := map[string]describedAs{}
	for _, mk := range providers {
		if a := mk(&core{}).api(); len(a.described.files) > 0 {
			m[a.name] = a.described
		}
	}
	return m
}()

package streams

func init() {
	variants["set"] = func() string { return luaSet }
	variants["exact11"] = func() string { return luaExact(11) }
	for _, k := range []int{5, 6, 7} {
		k := k
		variants["bloomk"+string(rune('0'+k))] = func() string {
			lv := bloomLevels(200000, 0.01)
			lv[0].K = k
			return luaBloom(lv)
		}
	}
}

import json,sys,statistics as st,collections
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g=collections.defaultdict(list)
for r in rows: g[(r['ex'],r['extra'],r['side'])].append(r)
print("| executor | mode | side | runs | jobs/s median (min–max) | client CPU µs/job | server CPU µs/job | allocs/job | lost | dup | load at start |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for k in sorted(g):
    v=g[k]; m=lambda f: st.median([x[f] for x in v])
    print(f"| {k[0]} | {k[1] or 'plain'} | {k[2]} | {len(v)} | {m('jps'):,.0f} ({min(x['jps'] for x in v):,.0f}–{max(x['jps'] for x in v):,.0f}) | {m('cli'):.2f} | {m('srv'):.2f} | {m('allocs'):.2f} | {sum(x['lost'] for x in v)} | {sum(x['dup'] for x in v)} | {', '.join(x['load'] for x in v)} |")

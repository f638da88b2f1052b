#!/usr/bin/env python3
"""A plain BM25 over a BEIR collection, and two rerankings of its top 100 that
canon has not tried in SQL: a term-proximity bonus and pseudo-relevance feedback
(RM3-like). Standard library only; quality-no-model.md reports what it printed.

    python3 bench/results/scripts/bm25_rerank.py ../shared/datasets/scifact

BM25 as canon's default (k1 1.2, b 0.75, title occurrences weighted 2, Lucene
idf), the query's own document dropped, nDCG@10 over the judged test queries.
Tokens: lower-case alphanumeric runs without a short stop list, plural -s/-es/-ies
folded (no stemmer: this is a comparison of rerankings, not of tokenisers).
"""
import collections
import json
import math
import re
import sys

STOP = set("""a an and are as at be by for from has have in is it its of on or that the this to was were
will with not no but what which who how why when do does did can could would should may might their they
them these those than then there been being into about over under also such more most other some any each
our we you your he she his her i me my""".split())
K1, B, TITLE = 1.2, 0.75, 2.0


def stem(w):
    for suf in ("ies", "es", "s"):
        if len(w) > 4 and w.endswith(suf):
            return w[:-len(suf)] + ("y" if suf == "ies" else "")
    return w


def tokens(text):
    return [stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def load(base):
    docs = {}
    for line in open(f"{base}/corpus.jsonl"):
        d = json.loads(line)
        docs[d["_id"]] = (tokens(d.get("title", "")), tokens(d["text"]))
    queries = {json.loads(l)["_id"]: json.loads(l)["text"] for l in open(f"{base}/queries.jsonl")}
    qrels = collections.defaultdict(dict)
    for i, line in enumerate(open(f"{base}/qrels/test.tsv")):
        if i:
            q, d, r = line.split("\t")
            qrels[q][d] = int(r)
    return docs, queries, qrels


class Index:
    def __init__(self, docs):
        self.n = len(docs)
        self.df, self.length, self.tf, self.pos = collections.Counter(), {}, {}, {}
        self.postings = collections.defaultdict(list)
        for did, (title, text) in docs.items():
            words = title + text
            self.tf[did] = (collections.Counter(text), collections.Counter(title))
            self.length[did] = len(words)
            p = collections.defaultdict(list)
            for i, t in enumerate(words):
                p[t].append(i)
            self.pos[did] = p
            for t in set(words):
                self.df[t] += 1
                self.postings[t].append(did)
        self.avgdl = sum(self.length.values()) / self.n

    def idf(self, t):
        return math.log(1 + (self.n - self.df[t] + 0.5) / (self.df[t] + 0.5))

    def weight(self, did, t):
        body, title = self.tf[did]
        tf = body[t] + TITLE * title[t]
        return tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.length[did] / self.avgdl)) if tf else 0.0

    def bm25(self, terms):
        scores = collections.defaultdict(float)
        for t, qtf in collections.Counter(terms).items():
            if t in self.df:
                for did in self.postings[t]:
                    scores[did] += qtf * self.idf(t) * self.weight(did, t)
        return scores

    def proximity(self, terms, did, window):
        """Each pair of query terms weighs its rarer term's idf: over its closest
        distance squared (window 0), or when within window tokens."""
        p = self.pos[did]
        present = [t for t in dict.fromkeys(terms) if t in p]
        total = 0.0
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                d = min(abs(x - y) for x in p[a][:50] for y in p[b][:50])
                w = min(self.idf(a), self.idf(b))
                total += w / (d * d) if window == 0 else (w if d <= window else 0)
        return total

    def feedback(self, terms, top, docs, n_terms):
        """RM3-like expansion from the top docs: terms by tf/length × idf."""
        weights = collections.Counter()
        for did in top[:docs]:
            body, title = self.tf[did]
            for t, n in (body + title).items():
                weights[t] += n / self.length[did] * self.idf(t)
        asked = set(terms)
        chosen = [t for t, _ in weights.most_common(2 * n_terms) if t not in asked][:n_terms]
        total = sum(weights[t] for t in chosen) or 1
        return {did: sum(weights[t] / total * self.idf(t) * self.weight(did, t) for t in chosen) for did in top}


def ndcg(ranked, rel, k=10):
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum((2 ** r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def rerank(top, base, extra, share):
    """(1 − share) × BM25 + share × extra, each divided by its best on the list."""
    bm, ex = max(base[d] for d in top) or 1, max(extra.values()) or 1
    return sorted(top, key=lambda d: -((1 - share) * base[d] / bm + share * extra[d] / ex))


def main(base):
    docs, queries, qrels = load(base)
    index = Index(docs)
    variants = {"bm25": []}
    for qid, rel in qrels.items():
        terms = tokens(queries[qid])
        scores = index.bm25(terms)
        scores.pop(qid, None)  # ArguAna: a query's own document is not an answer
        top = sorted(scores, key=lambda d: -scores[d])[:100]
        variants["bm25"].append(ndcg(top, rel))
        if not top:
            continue
        for window, name in ((0, "proximity 1/d²"), (5, "proximity window 5")):
            extra = {d: index.proximity(terms, d, window) for d in top}
            for share in (0.05, 0.1, 0.2):
                variants.setdefault(f"{name}, share {share}", []).append(ndcg(rerank(top, scores, extra, share), rel))
        for fb_docs in (5, 10):
            for fb_terms in (10, 20):
                extra = index.feedback(terms, top, fb_docs, fb_terms)
                for share in (0.1, 0.2, 0.3):
                    key = f"feedback {fb_docs} docs {fb_terms} terms, share {share}"
                    variants.setdefault(key, []).append(ndcg(rerank(top, scores, extra, share), rel))
    n = len(qrels)
    for name, values in variants.items():
        print(f"{name:45s} {sum(values) / n:.4f}")


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/"))

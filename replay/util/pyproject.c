/* pyproject.c - see pyproject.h. */
#include "pyproject.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t k = fread(b + n, 1, cap - n - 1, f);
        n += k;
        if (n + 1 < cap)
            break;
        char *nb = cap > (1u << 24) ? NULL : realloc(b, cap *= 2);
        if (!nb) {
            free(b);
            b = NULL;
        } else {
            b = nb;
        }
    }
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

static const char *skip_ws(const char *s, int newlines)
{
    for (;;) {
        while (*s == ' ' || *s == '\t' || (newlines && (*s == '\n' || *s == '\r')))
            s++;
        if (*s == '#' ) {
            while (*s && *s != '\n')
                s++;
            if (!newlines)
                return s;
            continue;
        }
        return s;
    }
}

/* A string at *s ("..." or '...'), owned; NULL when malformed. */
static char *string_at(const char **s)
{
    char q = **s;
    if (q != '"' && q != '\'')
        return NULL;
    const char *b = *s + 1, *e = strchr(b, q);
    if (!e || memchr(b, '\n', (size_t)(e - b)) || (q == '"' && memchr(b, '\\', (size_t)(e - b))))
        return NULL;
    char *out = malloc((size_t)(e - b) + 1);
    if (!out)
        return NULL;
    memcpy(out, b, (size_t)(e - b));
    out[e - b] = '\0';
    *s = e + 1;
    return out;
}

static int parse_table(gr_pyproject *p, const char *s, char *err, size_t errlen)
{
    int line = 1;
    (void)line;
    while (*s) {
        s = skip_ws(s, 1);
        if (!*s || *s == '[')
            return 0; /* the next table */
        const char *k = s;
        while (*s && *s != '=' && *s != '\n' && *s != ' ' && *s != '\t')
            s++;
        size_t kl = (size_t)(s - k);
        s = skip_ws(s, 0);
        if (*s != '=') {
            snprintf(err, errlen, "[tool.greenreplay]: expected KEY = VALUE near '%.*s'", (int)kl, k);
            return -1;
        }
        s = skip_ws(s + 1, 0);
        int is_allow = kl == 5 && memcmp(k, "allow", 5) == 0;
        if (is_allow || (kl == 7 && memcmp(k, "fail_on", 7) == 0)) {
            const char *key = is_allow ? "allow" : "fail_on";
            char ***arr = is_allow ? &p->allow : &p->fail_on;
            size_t *narr = is_allow ? &p->nallow : &p->nfail_on;
            if (*s != '[') {
                snprintf(err, errlen, "[tool.greenreplay]: %s must be an array of strings", key);
                return -1;
            }
            s = skip_ws(s + 1, 1);
            while (*s != ']') {
                char *v = string_at(&s);
                if (!v) {
                    snprintf(err, errlen, "[tool.greenreplay]: %s: a string expected", key);
                    return -1;
                }
                char **na = realloc(*arr, (*narr + 1) * sizeof *na);
                if (!na) {
                    free(v);
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
                *arr = na;
                (*arr)[(*narr)++] = v;
                s = skip_ws(s, 1);
                if (*s == ',')
                    s = skip_ws(s + 1, 1);
                else if (*s != ']') {
                    snprintf(err, errlen, "[tool.greenreplay]: %s: ',' or ']' expected", key);
                    return -1;
                }
            }
            s++;
        } else if (kl == 12 && memcmp(k, "strict_known", 12) == 0) {
            if (strncmp(s, "true", 4) == 0) {
                p->strict_known = 1;
                s += 4;
            } else if (strncmp(s, "false", 5) == 0) {
                p->strict_known = 0;
                s += 5;
            } else {
                snprintf(err, errlen, "[tool.greenreplay]: strict_known must be true or false");
                return -1;
            }
        } else { /* a key of another tool version: skip its line */
            while (*s && *s != '\n')
                s++;
        }
        s = skip_ws(s, 0);
        if (*s && *s != '\n' && *s != '\r') {
            snprintf(err, errlen, "[tool.greenreplay]: unexpected text after a value");
            return -1;
        }
    }
    return 0;
}

int gr_pyproject_read(gr_pyproject *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->strict_known = -1;
    char dir[PATH_MAX];
    if (!getcwd(dir, sizeof dir))
        return 0;
    for (;;) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/pyproject.toml", strcmp(dir, "/") ? dir : "");
        if (access(path, F_OK) == 0) {
            char *text = slurp(path);
            if (!text) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                return -1;
            }
            p->path = strdup(path);
            const char *t = text;
            int rc = 0;
            while ((t = strstr(t, "[tool.greenreplay]"))) {
                if (t == text || t[-1] == '\n') {
                    rc = parse_table(p, t + strlen("[tool.greenreplay]"), err, errlen);
                    break;
                }
                t++;
            }
            free(text);
            if (rc < 0) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s", err);
                snprintf(err, errlen, "%s: %s", path, msg);
            }
            return rc;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            if (strcmp(dir, "/") == 0)
                return 0;
            strcpy(dir, "/");
            continue;
        }
        *slash = '\0';
    }
}

void gr_pyproject_free(gr_pyproject *p)
{
    for (size_t i = 0; i < p->nallow; i++)
        free(p->allow[i]);
    free(p->allow);
    for (size_t i = 0; i < p->nfail_on; i++)
        free(p->fail_on[i]);
    free(p->fail_on);
    free(p->path);
    memset(p, 0, sizeof *p);
}

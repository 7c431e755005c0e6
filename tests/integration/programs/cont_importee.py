# Imported by continued_import.py inside a greenlet: switches at import time.
import greenlet

main = greenlet.getcurrent().parent
for i in range(3):
    main.switch(("importing", i))
VALUE = 42

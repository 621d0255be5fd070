"""Django 5 against Partita: the contrib apps' migrations and an app's (shop/: foot-race
registrations, with a second migration that adds, alters and renames columns and adds a
unique index on lower(email)), then the ORM as applications use it. Run by
tests/tests/e2e/drivers.rs with the server's address."""
import sys, os, datetime, decimal
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
host, port = sys.argv[1], int(sys.argv[2])
import django
from django.conf import settings
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "HOST": host, "PORT": port,
                           "NAME": "partita", "USER": "partita", "PASSWORD": ""}},
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                    "django.contrib.admin", "django.contrib.messages", "shop"],
    USE_TZ=True, TIME_ZONE="UTC", DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
)
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=1)
print("migrated")

from django.db import connection, transaction, IntegrityError
from django.db.models import Count, Sum, Q, F, Max
from django.db.models.functions import Lower
from django.utils import timezone
from shop.models import Race, Runner, Registration
from django.contrib.auth.models import User, Group, Permission

# Migrations ran again are a no-op, and Django sees no model change.
call_command("migrate", verbosity=0)

u = User.objects.create_user("ann", "ann@example.com", "secret")
assert User.objects.get(username="ann").check_password("secret")
g = Group.objects.create(name="staff")
u.groups.add(g)
u.user_permissions.add(*Permission.objects.filter(codename__startswith="add_")[:3])
assert u.get_all_permissions(), "permissions"
assert User.objects.filter(groups__name="staff").count() == 1

nyc = Race.objects.create(name="NYC Marathon", city="New York", fee=decimal.Decimal("295.50"),
                          starts=datetime.datetime(2024, 11, 3, 9, 10, tzinfo=datetime.timezone.utc),
                          details={"distance_km": 42.195, "tags": ["major"]})
bos = Race.objects.create(name="Boston", city="Boston", fee=decimal.Decimal("230.00"),
                          starts=datetime.datetime(2024, 4, 15, 10, 0, tzinfo=datetime.timezone.utc))
runners = Runner.objects.bulk_create([
    Runner(email=f"r{i}@example.com", name=f"Runner {i}", club="nyrr" if i % 2 else "baa",
           born=datetime.date(1980 + i, 1, 1)) for i in range(10)])
assert all(r.pk for r in runners), "bulk_create returns ids"
for i, r in enumerate(runners):
    Registration.objects.create(race=nyc if i < 6 else bos, runner=r, bib=100 + i, has_paid=i % 3 == 0)

try:
    with transaction.atomic():
        Runner.objects.create(email="R1@EXAMPLE.com", name="dup", club="x")
    raise AssertionError("case-insensitive unique email")
except IntegrityError:
    pass
try:
    with transaction.atomic():
        Registration.objects.create(race=nyc, runner=runners[0], bib=100)
    raise AssertionError("one bib per race")
except IntegrityError:
    pass

q = (Race.objects.annotate(n=Count("registrations"), paid=Count("registrations", filter=Q(registrations__has_paid=True)))
     .order_by("name").values_list("name", "n", "paid"))
assert list(q) == [("Boston", 4, 2), ("NYC Marathon", 6, 2)], list(q)
assert Runner.objects.filter(email__iexact="R3@example.COM").get().name == "Runner 3"
assert Runner.objects.filter(name__icontains="NER 1").count() == 1
assert Runner.objects.filter(name__startswith="Runner").count() == 10
assert Race.objects.filter(details__distance_km__gt=40).get() == nyc
assert Race.objects.filter(details__tags__contains=["major"]).count() == 1
assert Race.objects.filter(details__has_key="tags").count() == 1
regs = list(Registration.objects.select_related("race", "runner").filter(race__city="Boston").order_by("bib"))
assert [r.runner.name for r in regs] == ["Runner 6", "Runner 7", "Runner 8", "Runner 9"], regs
assert [r.bib for r in Registration.objects.filter(race__in=Race.objects.filter(city__startswith="Bos")).order_by("-bib")[:2]] == [109, 108]
assert Runner.objects.filter(registration__race=nyc, born__year__gte=1983).count() == 3
total = Registration.objects.filter(has_paid=True).aggregate(s=Sum("race__fee"))["s"]
assert total == decimal.Decimal("1051.00"), total
Registration.objects.filter(race=bos).update(has_paid=True)
assert Registration.objects.filter(has_paid=True).count() == 6
Race.objects.filter(pk=bos.pk).update(fee=F("fee") + 10)
bos.refresh_from_db()
assert bos.fee == decimal.Decimal("240.00")
obj, created = Runner.objects.update_or_create(email="new@example.com", defaults={"name": "New", "club": "x"})
assert created
obj, created = Runner.objects.update_or_create(email="new@example.com", defaults={"name": "Newer", "club": "x"})
assert not created and Runner.objects.get(email="new@example.com").name == "Newer"
obj, created = Runner.objects.get_or_create(email="r2@example.com", defaults={"name": "x", "club": "x"})
assert not created
Runner.objects.bulk_create([Runner(email="r0@example.com", name="again", club="x")], ignore_conflicts=True)
Runner.objects.bulk_create([Runner(email="up@example.com", name="one", club="x")])
Runner.objects.bulk_create([Runner(email="up@example.com", name="two", club="y")], update_conflicts=True,
                           unique_fields=["email"], update_fields=["name", "club"])
assert Runner.objects.get(email="up@example.com").name == "two"
with transaction.atomic():
    Race.objects.create(name="Tmp", city="X", fee=1, starts=timezone.now())
    sid = transaction.savepoint()
    Race.objects.filter(name="Tmp").delete()
    transaction.savepoint_rollback(sid)
assert Race.objects.filter(name="Tmp").exists()
try:
    runners[9].delete()
    raise AssertionError("PROTECT")
except Exception as e:
    assert type(e).__name__ == "ProtectedError", e
bos.delete()
assert Registration.objects.filter(race__name="Boston").count() == 0
assert Registration.objects.count() == 6
by_year = dict(Registration.objects.values_list("registered__year").annotate(n=Count("id")))
assert by_year == {timezone.now().year: 6}, by_year
latest = Race.objects.aggregate(m=Max("starts"))["m"]
assert latest is not None
with connection.cursor() as c:
    c.execute("SELECT count(*) FROM shop_runner WHERE lower(email) = %s", ["r5@example.com"])
    assert c.fetchone() == (1,)
page = list(Runner.objects.order_by("email").values_list("email", flat=True)[3:5])
assert page == ["r2@example.com", "r3@example.com"], page
assert Runner.objects.filter(Q(club="nyrr") | Q(name__endswith="8")).count() == 6
assert list(Runner.objects.filter(pk__in=[runners[0].pk, runners[1].pk]).order_by("pk").values_list("name", flat=True)) == ["Runner 0", "Runner 1"]
# Server-side cursors (.iterator() declares one WITH HOLD), row locks, subqueries, windows.
names = [r.name for r in Runner.objects.filter(email__startswith="r").order_by("pk").iterator(chunk_size=3)]
assert names[:3] == ["Runner 0", "Runner 1", "Runner 2"] and len(names) == 10, names
with transaction.atomic():
    locked = list(Runner.objects.select_for_update().filter(club="nyrr").order_by("pk"))
    assert len(locked) == 5
from django.db.models import Exists, OuterRef, Subquery, Window
from django.db.models.functions import Rank, TruncMonth
registered = Registration.objects.filter(runner=OuterRef("pk"))
assert Runner.objects.filter(Exists(registered)).count() == 6
first_bib = Registration.objects.filter(runner=OuterRef("pk")).order_by("bib").values("bib")[:1]
bibs = dict(Runner.objects.filter(email__in=["r0@example.com", "r5@example.com"]).annotate(b=Subquery(first_bib)).values_list("email", "b"))
assert bibs == {"r0@example.com": 100, "r5@example.com": 105}, bibs
ranked = list(Registration.objects.annotate(r=Window(Rank(), order_by=F("bib").desc())).order_by("r").values_list("bib", "r")[:2])
assert ranked == [(105, 1), (104, 2)], ranked
months = list(Race.objects.annotate(m=TruncMonth("starts")).values_list("m", flat=True).distinct())
assert len(months) == 2, months
assert list(Race.objects.dates("starts", "year"))[0] == datetime.date(2024, 1, 1)
assert Runner.objects.values("club").distinct().count() == 4, list(Runner.objects.values("club").distinct())
print("django ok")

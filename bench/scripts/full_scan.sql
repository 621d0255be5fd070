SELECT city, count(*), avg(age) FROM reg GROUP BY city;
